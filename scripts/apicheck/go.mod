module github.com/vllm-cibench/cibench/scripts/apicheck

go 1.26.0

require (
	golang.org/x/exp v0.0.0-20251219203646-944ab1f22d93
	golang.org/x/tools v0.51.0
)

require (
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
)
