package matrix

import (
	"errors"
	"github.com/vllm-cibench/cibench/field"
	"reflect"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/internal/yamlstrict"
)

// ErrConfig 被 Load 与 Block.Decode 返回的每一条错误包装。每条错误是 *field.Error：
// 哪个文件、哪一行哪一列、哪个字段路径、什么值、为什么不对——与 cibench 其他入口（bench、
// accuracy、functional 的 --config）以及各阶段包的校验错误同一个类型，调用方用 errors.As
// 逐条取出，文本为 "matrix: invalid config: 文件:行:列: 路径: 说明 (got "值")"。
var ErrConfig = errors.New("matrix: invalid config")

// joinErrors 给每条错误（的副本）挂上 ErrConfig 后以 errors.Join 合并；没有错误时返回 nil。
// 来自别的包的错误原本挂着那个包的哨兵，在矩阵里它们已被定位到矩阵的文件，统一归为 ErrConfig。
func joinErrors(list []*field.Error) error {
	if len(list) == 0 {
		return nil
	}
	errs := make([]error, len(list))
	for i, e := range list {
		c := *e
		c.Err = ErrConfig
		errs[i] = &c
	}
	return errors.Join(errs...)
}

// decoder 是共用的严格解码器，装上本包的两个钩子（见 newDecoder）。
type decoder = yamlstrict.Decoder

// nodeDecoder 由需要自行解释 YAML 节点的本包类型实现（例如保持键顺序的
// 映射、延迟解码的 Block）。
type nodeDecoder interface {
	decodeNode(d *decoder, n *yaml.Node, path string)
}

// enumValue 由枚举类字符串类型实现，在解码时即报告非法取值，
// 这样错误能指向该值所在的行。
type enumValue interface {
	checkEnum() error
}

var (
	nodeDecType = reflect.TypeOf((*nodeDecoder)(nil)).Elem()
	enumType    = reflect.TypeOf((*enumValue)(nil)).Elem()
	featureType = reflect.TypeOf(functional.Feature(""))
)

// captureParams 把功能配置的 params.<用例 ID> 块保存为 functional.CaseParams（YAML 文本与位置），
// 几个文件按用例 ID 合并；声明了 Case.Params 的用例由 checkCaseParams 用 params 映射里的原节点
// 另行严格校验（错误带确切的行列）。
var captureParams = yamlstrict.CaptureBlocks(reflect.TypeOf(functional.CaseParams{}))

// newDecoder 为显示名为 file 的文件创建解码器：实现 nodeDecoder 的类型自行解码，
// 实现 enumValue 的类型在解码后校验取值，functional.Feature 按 feats 登记表校验
// （nil 取 functional.DefaultFeatures()，Block.Decode 这样不经 Load 的路径用它）。
// 钩子经私有接口识别，不给本包的公开类型增加导出方法。
func newDecoder(file string, feats *functional.Features) *decoder {
	if feats == nil {
		feats = functional.DefaultFeatures()
	}
	d := yamlstrict.NewDecoder(file)
	d.Custom = func(d *decoder, n *yaml.Node, path string, v reflect.Value) bool {
		// 功能配置的 params.<用例 ID> 块原样保存（functional.CaseParams），按键合并。
		if captureParams(d, n, path, v) {
			return true
		}
		if !reflect.PointerTo(v.Type()).Implements(nodeDecType) {
			return false
		}
		v.Addr().Interface().(nodeDecoder).decodeNode(d, n, path)
		return true
	}
	d.Check = func(v reflect.Value) error {
		if reflect.PointerTo(v.Type()).Implements(enumType) {
			return v.Addr().Interface().(enumValue).checkEnum()
		}
		// functional.Feature 属于别的包，不能有本包的私有方法，按登记表单独校验。
		if v.Type() == featureType {
			return feats.Check(v.Interface().(functional.Feature))
		}
		return nil
	}
	return d
}

// isNull 报告节点是否为 YAML 空值（null、~ 或空）。
func isNull(n *yaml.Node) bool { return yamlstrict.IsNull(n) }

// scalarValue 返回标量节点的原文，非标量返回空串。
func scalarValue(n *yaml.Node) string { return yamlstrict.ScalarValue(n) }

// describe 给出节点的简短描述，用于类型不符的错误信息。
func describe(n *yaml.Node) string { return yamlstrict.Describe(n) }

// joinPath 在 path 后追加字段名。
func joinPath(path, key string) string { return yamlstrict.JoinPath(path, key) }

// reflectValue 返回指针 p 所指向的可寻址值。
func reflectValue(p any) reflect.Value { return reflect.ValueOf(p).Elem() }
