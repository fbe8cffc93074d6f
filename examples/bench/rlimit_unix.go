//go:build unix

package main

import "syscall"

// raiseNoFile 把打开文件数软限制提到硬限制：2000 个并发流在两端共需约 4000 个描述符。
func raiseNoFile() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}
