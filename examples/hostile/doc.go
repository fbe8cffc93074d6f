// Package hostile 只有端到端测试：它把真实的 examples/{bench,functional,accuracy,ci}
// 编译一次，逐个对 internal/hostile 的每种故障作为子进程运行，断言 issue 14 的
// "Done when"：不卡住（在由所配超时推出的期限内退出，否则杀掉并判失败）、故障在
// 工具自己的产物里以失败及其类别出现（不是跳过、不是成功）、峰值 RSS 有界、
// 任何输出与产物中都没有金丝雀密钥（原文、base64 的 Basic 凭据对）。
//
//	go test ./examples/hostile/            # 全部 工具×故障（CI 运行的就是它）
//	go test -short ./examples/hostile/     # 不含 ci 驱动与探测请求变体
//	go test ./examples/hostile/ -run 'TestHostile/bench/stall'
//
// 每个 工具×故障 是表格中的一行；结果矩阵在测试结束时用 t.Log 打印。
package hostile
