package shard

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/vllm-cibench/cibench/loadgen"
)

// MaxRecordLineBytes 是逐请求记录流中一行（一条 loadgen.Record 的 JSON）的字节上限：逐 chunk 的
// 时刻与 token 数让长输出的一行到几 MB；上限让一个坏掉的分片文件不能耗尽合并方的内存。
const MaxRecordLineBytes = 64 << 20

// ErrBadRecords 表示逐请求记录流中有无法解码的行（例如被杀的分片写了一半的最后一行）。
var ErrBadRecords = errors.New("shard: bad per-request records")

// RecordWriter 把分片的逐请求记录写成 JSON Lines：每行一条完整的 loadgen.Record（分组、序号、
// 实例、会话、全部时刻与时长、逐 chunk 的时刻与 token 数、token 计数、结束原因、状态与错误分类），
// 比逐请求 CSV 的列多而不少，合并方据此把记录原样交回调用方的 Observer（见 Replay）。
// Record.Error 已经过 Run 的脱敏，不含密钥。
//
// 写入经 64 KiB 缓冲，每组结束（OnGroupEnd）与 Flush 时刷出：分片进程被杀时最多丢掉当前组
// 未刷出的行，读方在写了一半的行处停下。不是并发安全的，与 Observer 的串行约定一致。
type RecordWriter struct {
	bw  *bufio.Writer
	enc *json.Encoder
}

// NewRecordWriter 创建写往 w 的记录流写入器。
func NewRecordWriter(w io.Writer) *RecordWriter {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &RecordWriter{bw: bw, enc: enc}
}

// Observer 返回挂着 OnRecord（写一行）与 OnGroupEnd（刷出）的观察者，交给 RunShard 或 loadgen.Tee。
func (w *RecordWriter) Observer() *loadgen.Observer {
	return &loadgen.Observer{OnRecord: w.WriteRecord, OnGroupEnd: func(loadgen.Summary) error { return w.Flush() }}
}

// WriteRecord 写一条记录（一行 JSON）。预热请求不会到这里（Run 不交出它们），所以不再过滤。
func (w *RecordWriter) WriteRecord(r *loadgen.Record) error {
	if err := w.enc.Encode(r); err != nil {
		return fmt.Errorf("shard: write record: %w", err)
	}
	return nil
}

// Flush 把缓冲的行写出。
func (w *RecordWriter) Flush() error {
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("shard: write records: %w", err)
	}
	return nil
}

// RecordReader 逐条读出 RecordWriter 写的记录流。
type RecordReader struct {
	name string
	sc   *bufio.Scanner
	line int
}

// NewRecordReader 创建从 r 读记录的读取器；name 只用于错误信息（通常是文件名）。
func NewRecordReader(r io.Reader, name string) *RecordReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxRecordLineBytes)
	return &RecordReader{name: name, sc: sc}
}

// Next 读出下一条记录；流结束时返回 io.EOF。坏行（不是 JSON、超过 MaxRecordLineBytes、
// 写了一半）返回 ErrBadRecords，点名流的名字与行号；之后不应再调用 Next。空行被跳过。
func (rr *RecordReader) Next() (*loadgen.Record, error) {
	for rr.sc.Scan() {
		rr.line++
		b := bytes.TrimSpace(rr.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var rec loadgen.Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrBadRecords, rr.name, rr.line, err)
		}
		return &rec, nil
	}
	if err := rr.sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s:%d: %v", ErrBadRecords, rr.name, rr.line+1, err)
	}
	return nil, io.EOF
}
