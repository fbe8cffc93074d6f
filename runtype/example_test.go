package runtype_test

import (
	"fmt"

	"github.com/vllm-cibench/cibench/runtype"
)

// ExampleParse 展示命令行取值的解析：matrix、metrics 与 report 都接受同一个 runtype.Type。
func ExampleParse() {
	rt, err := runtype.Parse("daily")
	fmt.Println(rt, err, rt == runtype.Daily)
	_, err = runtype.Parse("nightly")
	fmt.Println(err)
	// Output:
	// daily <nil> true
	// runtype: "nightly": invalid run type (want pr or daily)
}
