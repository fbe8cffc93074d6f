package pyrandom_test

import (
	"fmt"

	"github.com/vllm-cibench/cibench/internal/pyrandom"
)

// ExampleRandom_SampleIndices 复现 simple-evals GPQA debug 的行抽样：
// random.Random(0).sample(range(198), 5)。
func ExampleRandom_SampleIndices() {
	r := pyrandom.New(0)
	rows, _ := r.SampleIndices(198, 5)
	perm, _ := r.SampleIndices(4, 4)
	fmt.Println(rows, perm)
	// Output: [98 194 107 10 66] [3 1 2 0]
}
