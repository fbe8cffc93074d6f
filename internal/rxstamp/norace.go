//go:build !race

package rxstamp

// raceEnabled 报告是否在 -race 下构建。
const raceEnabled = false
