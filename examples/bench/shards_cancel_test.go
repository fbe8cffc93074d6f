//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/shard"
	"github.com/vllm-cibench/cibench/metrics"
)

// TestShardsCancelledRunMarkedIncomplete 补上 issue 22 “取消”这一种丢分片的方式：像用户一样把 bench
// （测试二进制扮演主程序）以 --shards 2 跑在一个慢模拟器上，两个分片都开始发请求之后给父进程发
// SIGINT 或 SIGTERM（CI 取消、kubectl delete），或者像终端里按 Ctrl-C 那样把 SIGINT 发给整个进程组。要求：退出码 130（项目对“被中断”的约定，
// docs/report.md）；<summary>.merge.json 写着 complete=false、两个分片都缺失且原因是 cancelled（不是
// killed——子进程是父进程取消的，不是死于外来的信号）；.INCOMPLETE 标记存在；汇总 CSV 的表头与
// acs-bench 逐字节相同；stderr 点名两个分片。
//
// 修复前：SIGINT 时父进程的 exec.CommandContext 以 SIGKILL 杀掉子进程，谁都没有交回结果，
// 于是只有一句 "no shard returned a result"、没有任何产物，退出码 1；SIGTERM 根本没有被处理，
// 父进程直接死掉，子进程成了孤儿。
func TestShardsCancelledRunMarkedIncomplete(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		group bool // 发给整个进程组（终端里按 Ctrl-C：父进程与子进程同时收到 SIGINT）
	}{
		{"sigint-parent", syscall.SIGINT, false},
		{"sigterm-parent", syscall.SIGTERM, false},
		{"ctrl-c-process-group", syscall.SIGINT, true},
	} {
		sig := tc.sig
		t.Run(tc.name, func(t *testing.T) {
			url, served := countingEmulator(t, emulator.Config{Model: "m", TTFT: 200 * time.Millisecond})
			prov := writeProvider(t, "cancelled", "EMPTY", url)
			dir := t.TempDir()
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			// 400 个请求、c=4、每个至少 200 ms：不取消要跑 20 秒以上，取消时一定在运行中。
			cmd := exec.Command(exe, "prof", "-p", prov, "-c", "4", "-il", "16", "-ol", "2", "-n", "400", "--shards", "2", "-s", dir, "--quiet")
			cmd.Env = append(os.Environ(), asMainEnv+"=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // 自己的进程组：信号只到 bench 与它的子进程
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			deadline := time.After(2 * time.Minute) // 宽松：忙碌的机器上子进程启动也可能要好几秒
		wait:
			for served.Load() < 8 {
				select {
				case err := <-done:
					t.Fatalf("bench ended before it was interrupted: %v\n%s", err, stderr.String())
				case <-deadline:
					_ = cmd.Process.Kill()
					t.Fatalf("shards never sent 8 requests (served %d)\n%s", served.Load(), stderr.String())
				case <-time.After(20 * time.Millisecond):
					continue wait
				}
			}
			target := cmd.Process.Pid
			if tc.group {
				target = -target
			}
			if err := syscall.Kill(target, sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err = <-done:
			case <-time.After(2 * time.Minute):
				_ = cmd.Process.Kill()
				t.Fatalf("bench did not stop within 2 minutes of %v\n%s", sig, stderr.String())
			}
			t.Logf("bench after %v:\n%s", sig, stderr.String())
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Fatalf("exit after %v: %v, want exit status 130\n%s", sig, err, stderr.String())
			}
			for _, want := range []string{"shard 0: cancelled", "shard 1: cancelled"} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			if strings.Contains(stderr.String(), "killed") {
				t.Errorf("stderr calls a cancelled shard killed:\n%s", stderr.String())
			}
			files, _ := filepath.Glob(filepath.Join(dir, "summary_cancelled_*.merge.json"))
			if len(files) != 1 {
				t.Fatalf("merge report files %v\n%s", files, stderr.String())
			}
			b, _ := os.ReadFile(files[0])
			var rep mergeReport
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Complete || rep.Shards != 2 || len(rep.Missing) != 2 {
				t.Fatalf("merge report (want complete=false, 2 shards, 2 missing):\n%s", b)
			}
			for i, m := range rep.Missing {
				if m.Shard != i || m.Reason != loadgen.LossCancelled {
					t.Fatalf("missing shard %d: %+v, want shard %d reason %q\n%s", i, m, i, loadgen.LossCancelled, b)
				}
			}
			if len(rep.Groups) != 1 || rep.Groups[0].Complete || len(rep.Groups[0].Missing) != 2 || rep.Groups[0].NumPrompts >= 400 {
				t.Fatalf("merge report group (want one incomplete group, both shards missing, fewer than 400 prompts):\n%s", b)
			}
			if m, _ := filepath.Glob(filepath.Join(dir, "summary_cancelled_*.INCOMPLETE")); len(m) != 1 {
				t.Fatalf("no .INCOMPLETE marker: %v", m)
			}
			sums, _ := filepath.Glob(filepath.Join(dir, "summary_cancelled_*.csv"))
			if len(sums) != 1 {
				t.Fatalf("summary CSVs %v", sums)
			}
			head, _ := os.ReadFile(sums[0])
			lines := strings.Split(strings.TrimSpace(string(head)), "\n")
			if lines[0] != metrics.SummaryHeader || len(lines) != 2 {
				t.Fatalf("summary CSV (want the acs-bench header and one row):\n%s", head)
			}
		})
	}
}

// TestShardsCancelledBeforeStartNamed 验证运行在子进程启动之前就被取消（Ctrl-C 落在启动的瞬间）时，
// 没有任何分片交回结果也照样写出 .merge.json（complete=false、每个分片原因 cancelled、没有汇总 CSV）
// 与 .INCOMPLETE 标记，错误是 ErrShardMissing。修复前：子进程启动失败被记成 failed（"start: context
// canceled"），且整个运行只返回 "no shard returned a result"，不留任何产物。
func TestShardsCancelledBeforeStartNamed(t *testing.T) {
	url, _ := countingEmulator(t, emulator.Config{Model: "m"})
	prov := writeProvider(t, "early", "EMPTY", url)
	dir := t.TempDir()
	args := []string{"-p", prov, "-c", "2", "-il", "16", "-ol", "2", "-n", "4", "--shards", "2", "-s", dir, "--quiet"}
	o, err := parseFlags(args, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stderr bytes.Buffer
	handled, err := runSharded(ctx, o, args, &stderr)
	if !handled || !errors.Is(err, shard.ErrMissing) {
		t.Fatalf("runSharded with a cancelled ctx: handled %v, err = %v, want ErrShardMissing\n%s", handled, err, stderr.String())
	}
	for _, want := range []string{"shard 0: cancelled", "shard 1: cancelled"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "summary_early_*.merge.json"))
	if len(files) != 1 {
		t.Fatalf("merge report files %v\n%s", files, stderr.String())
	}
	b, _ := os.ReadFile(files[0])
	var rep mergeReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Complete || rep.Summary != "" || rep.Shards != 2 || len(rep.Missing) != 2 ||
		rep.Missing[0].Shard != 0 || rep.Missing[0].Reason != loadgen.LossCancelled ||
		rep.Missing[1].Shard != 1 || rep.Missing[1].Reason != loadgen.LossCancelled {
		t.Fatalf("merge report (want complete=false, no summary, shards 0 and 1 cancelled):\n%s", b)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "summary_early_*.INCOMPLETE")); len(m) != 1 {
		t.Fatalf("no .INCOMPLETE marker: %v", m)
	}
}

// TestBenchInterruptedExits130 验证单进程的 bench 被 SIGTERM 中断时与 --shards 一样：退出码 130，
// 汇总 CSV 照常写出（表头不变、被中断的一组一行），stderr 标出 INCOMPLETE。修复前 SIGTERM 没有被
// 处理，进程直接死掉、不写汇总 CSV；SIGINT 时退出码是 1，与“失败”分不开。
func TestBenchInterruptedExits130(t *testing.T) {
	url, served := countingEmulator(t, emulator.Config{Model: "m", TTFT: 200 * time.Millisecond})
	prov := writeProvider(t, "single", "EMPTY", url)
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "prof", "-p", prov, "-c", "2", "-il", "16", "-ol", "2", "-n", "200", "-s", dir, "--quiet")
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(2 * time.Minute)
	for served.Load() < 4 {
		select {
		case err := <-done:
			t.Fatalf("bench ended before it was interrupted: %v\n%s", err, stderr.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("bench never sent 4 requests\n%s", stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("bench did not stop within 2 minutes of SIGTERM\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit after SIGTERM: %v, want exit status 130\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "INCOMPLETE: interrupted") {
		t.Fatalf("stderr does not mark the interrupted group:\n%s", stderr.String())
	}
	sums, _ := filepath.Glob(filepath.Join(dir, "summary_single_*.csv"))
	if len(sums) != 1 {
		t.Fatalf("summary CSVs %v\n%s", sums, stderr.String())
	}
	head, _ := os.ReadFile(sums[0])
	lines := strings.Split(strings.TrimSpace(string(head)), "\n")
	if lines[0] != metrics.SummaryHeader || len(lines) != 2 {
		t.Fatalf("summary CSV (want the acs-bench header and one row):\n%s", head)
	}
}
