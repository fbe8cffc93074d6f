package report

import (
	"math"
	"reflect"
)

// sanitizeFloats 把 v（指针）所指数据中所有 NaN/±Inf 的 float64 替换为 −1
// （与 acs-bench CSV 的"不可测"约定一致）。encoding/json 拒绝编码 NaN/Inf，
// 一个除零得到的 QPS 就会让 summary.json 此后再也写不出来，所以在记录时清洗。
func sanitizeFloats(v any) {
	sanitizeValue(reflect.ValueOf(v))
}

// sanitizeValue 递归处理结构体、切片、数组、映射与指针。
func sanitizeValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			sanitizeValue(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			// 未导出字段不会被 encoding/json 编码，也不能经反射修改，跳过。
			if v.Type().Field(i).IsExported() {
				sanitizeValue(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			sanitizeValue(v.Index(i))
		}
	case reflect.Map:
		if v.Type().Elem().Kind() == reflect.Float64 {
			for _, k := range v.MapKeys() {
				if f := v.MapIndex(k).Float(); math.IsNaN(f) || math.IsInf(f, 0) {
					v.SetMapIndex(k, reflect.ValueOf(-1.0).Convert(v.Type().Elem()))
				}
			}
		}
	case reflect.Float64, reflect.Float32:
		if f := v.Float(); v.CanSet() && (math.IsNaN(f) || math.IsInf(f, 0)) {
			v.SetFloat(-1)
		}
	}
}
