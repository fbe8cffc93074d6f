//go:build !unix

package main

// raiseNoFile 在没有 RLIMIT_NOFILE 的平台（如 Windows）上什么也不做：
// 那里的句柄上限不是自检的瓶颈。
func raiseNoFile() {}
