package simpleevals

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/vllm-cibench/cibench/internal/procgroup"
)

// executorIdle 是 harness 进程没有待执行补全后继续保留的时间：同一次评测的补全
// 陆续到达，共用一个已完成预加载的进程（与上游单进程一致，也省去每次 import pandas）。
const executorIdle = 5 * time.Second

// errExecutorGone 表示 harness 进程在给出判定前退出或失去响应（基础设施故障，不是判定）。
var errExecutorGone = errors.New("simpleevals: humaneval: executor exited without a verdict")

// tailBuffer 只保留最后 max 字节：补全可以向 stdout/stderr 写任意多内容，
// 这里只为诊断 harness 自身的失败保留尾部。
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// Write 追加并截断到最后 max 字节，从不返回错误（不能让子进程因管道写失败而改变行为）。
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// String 返回保留的尾部（去掉首尾空白）。
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// execReply 是 harness 写到结果描述符的一行：先是 hello，之后每个请求一行。
type execReply struct {
	Hello  *execHello `json:"hello"`
	ID     int64      `json:"id"`
	Result *string    `json:"result"`
	Error  string     `json:"error"`
}

// execHello 是 harness 启动后报告的解释器信息。
type execHello struct {
	Python     string   `json:"python"`
	Executable string   `json:"executable"`
	Preloaded  []string `json:"preloaded"`
	Missing    []string `json:"missing"`
}

// execProc 是一个运行中的 harness 进程。
type execProc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	out     *tailBuffer
	hello   chan struct{} // 收到 hello 或进程结束时关闭
	runtime PythonRuntime
	done    chan struct{} // 进程结束且所有等待者已被通知时关闭
	err     error         // done 关闭后有效
}

// executor 管理常驻 harness 进程：按需启动，空闲 executorIdle 后关闭 stdin 让它退出。
type executor struct {
	mu      sync.Mutex
	proc    *execProc
	nextID  int64
	pending map[int64]chan execReply
	busy    int
	idle    *time.Timer
	// idleAfter 为 0 时取 executorIdle（测试用更短的值）。
	idleAfter time.Duration
}

// start 启动 harness 并等待 hello；解释器无法启动时返回包装了 ErrNoPython 的错误。
func (e *executor) start(ctx context.Context, interp []string, preload []string, grace time.Duration) (*execProc, error) {
	dir, err := os.MkdirTemp("", "cibench-humaneval-")
	if err != nil {
		return nil, fmt.Errorf("simpleevals: humaneval: temp dir: %w", err)
	}
	// workdir：harness 在 stdin 结束（本进程关闭它，或本进程已退出）后自己删掉这个目录。下面等待
	// harness 的 goroutine 也删它，但宿主进程在 harness 空闲的 executorIdle 之内退出时（一次评测刚结束
	// 程序就返回）那个 goroutine 已不在，以前每次这样的运行都在临时目录里留下一个空目录。
	cfg, err := json.Marshal(map[string]any{"preload": preload, "result_fd": humanEvalResultFD, "workers": 12, "workdir": dir})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("simpleevals: humaneval: %w", err)
	}
	rr, rw, err := os.Pipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("simpleevals: humaneval: result pipe: %w", err)
	}
	args := append(append([]string{}, interp[1:]...), "-I", "-c", humanEvalHarness, string(cfg))
	cmd := exec.Command(interp[0], args...)
	cmd.Dir = dir
	// 不继承任何环境变量（代理、密钥），HOME 与 TMPDIR 指向临时目录：上游 check_correctness 给每个补全建的
	// 临时目录（tempfile）在超时被杀的子进程里来不及删除，放在这里随目录一起删掉，不再留在系统的 /tmp。
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		rr.Close()
		rw.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("simpleevals: humaneval: %w", err)
	}
	p := &execProc{cmd: cmd, stdin: stdin, out: &tailBuffer{max: 4096}, hello: make(chan struct{}), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.ExtraFiles = []*os.File{rw}
	// 独立进程组：harness 失去响应时连同 fork 出的执行子进程一起杀掉，不留孤儿。
	procgroup.Setup(cmd)
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		rr.Close()
		rw.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: %s: %w", ErrNoPython, interp[0], err)
	}
	rw.Close()
	go e.read(p, rr, interp)
	go func() {
		werr := cmd.Wait()
		rr.Close()
		os.RemoveAll(dir)
		e.finish(p, werr)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.hello:
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	case <-t.C:
		p.kill()
		<-p.done
		return nil, fmt.Errorf("%w: no hello within %v: %s", errExecutorGone, grace, p.out.String())
	}
	select {
	case <-p.done:
		return nil, p.err
	default:
	}
	return p, nil
}

// kill 杀掉 harness 的整个进程组。
func (p *execProc) kill() {
	if p.cmd.Process != nil {
		_ = procgroup.Kill(p.cmd.Process.Pid)
	}
}

// read 逐行读取结果描述符，把每个判定交给等待它的 check。
func (e *executor) read(p *execProc, r io.Reader, interp []string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	helloSeen := false
	for sc.Scan() {
		var rep execReply
		if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
			continue
		}
		if rep.Hello != nil && !helloSeen {
			helloSeen = true
			p.runtime = PythonRuntime{Interpreter: interp, Executable: rep.Hello.Executable, Version: rep.Hello.Python,
				Preloaded: rep.Hello.Preloaded, Missing: rep.Hello.Missing}
			close(p.hello)
			continue
		}
		e.mu.Lock()
		ch := e.pending[rep.ID]
		delete(e.pending, rep.ID)
		e.mu.Unlock()
		if ch != nil {
			ch <- rep
		}
	}
	if !helloSeen {
		close(p.hello)
	}
}

// finish 在 harness 退出后通知所有仍在等待的 check，并让下一次 check 重新启动进程。
func (e *executor) finish(p *execProc, werr error) {
	p.err = fmt.Errorf("%w (%v): %s", errExecutorGone, werr, p.out.String())
	e.mu.Lock()
	if e.proc == p {
		e.proc = nil
		for id, ch := range e.pending {
			delete(e.pending, id)
			close(ch)
		}
	}
	e.mu.Unlock()
	close(p.done)
}

// run 把一个程序交给常驻 harness 执行并等待判定。deadline 是兜底：harness 自己按上游的
// join(timeout + 1) 判超时，超过 deadline 仍无回复说明 harness 失去响应，杀掉并返回错误。
func (h *HumanEval) run(ctx context.Context, program string) (string, error) {
	e := &h.exec
	e.mu.Lock()
	p := e.proc
	if p == nil {
		e.mu.Unlock()
		np, err := e.start(ctx, h.opts.Interpreter, h.opts.Preload, h.opts.StartupGrace)
		if err != nil {
			return "", err
		}
		e.mu.Lock()
		if e.proc == nil {
			e.proc = np
		} else {
			np.stdin.Close() // 另一个 check 已抢先启动，这个让它自然退出
		}
		p = e.proc
	}
	if e.pending == nil {
		e.pending = map[int64]chan execReply{}
	}
	e.nextID++
	id := e.nextID
	ch := make(chan execReply, 1)
	e.pending[id] = ch
	e.busy++
	if e.idle != nil {
		e.idle.Stop()
	}
	req, _ := json.Marshal(map[string]any{"id": id, "program": program, "timeout": h.opts.ExecTimeout.Seconds()})
	_, werr := p.stdin.Write(append(req, '\n'))
	e.mu.Unlock()
	h.mu.Lock()
	if h.runtime == nil {
		rt := p.runtime
		h.runtime = &rt
	}
	h.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.pending, id)
		e.busy--
		if e.busy == 0 && e.proc == p {
			d := e.idleAfter
			if d == 0 {
				d = executorIdle
			}
			e.idle = time.AfterFunc(d, func() { e.closeIdle(p) })
		}
		e.mu.Unlock()
	}()
	if werr != nil {
		<-p.done
		return "", p.err
	}
	t := time.NewTimer(h.opts.ExecTimeout + time.Second + h.opts.StartupGrace)
	defer t.Stop()
	select {
	case rep, ok := <-ch:
		switch {
		case !ok:
			<-p.done
			return "", p.err
		case rep.Result != nil:
			return *rep.Result, nil
		default:
			return "", fmt.Errorf("simpleevals: humaneval: executor: %s", rep.Error)
		}
	case <-ctx.Done():
		return "", ctx.Err()
	case <-t.C:
		p.kill()
		<-p.done
		return "", fmt.Errorf("%w: no verdict within %v", errExecutorGone, h.opts.ExecTimeout+time.Second+h.opts.StartupGrace)
	}
}

// closeIdle 在 p 仍空闲时关闭其 stdin，harness 读到 EOF 后执行完手头的检查并退出。
func (e *executor) closeIdle(p *execProc) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.proc == p && e.busy == 0 {
		e.proc = nil
		p.stdin.Close()
	}
}

// check 复刻 human_eval.execution.check_correctness，返回 "passed"、"timed out"
// 或 "failed: ..."。只有父 context 被取消、解释器无法启动或 harness 自身失去响应时
// 才返回错误（补全把执行子进程弄崩溃时 harness 照上游记为 "timed out"）。
func (h *HumanEval) check(ctx context.Context, p humanEvalProblem, completion string) (string, error) {
	program := p.Prompt + completion + "\n" + p.Test + "\n" + "check(" + p.EntryPoint + ")"
	select {
	case h.execSlots <- struct{}{}:
		defer func() { <-h.execSlots }()
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return h.run(ctx, program)
}
