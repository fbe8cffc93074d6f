package loadgen

import (
	"strings"
	"testing"
)

// TestSplitThink 验证 <think>…</think> 的切分，包括标签被拆到多个 chunk 的情形。
func TestSplitThink(t *testing.T) {
	x := newExchange()
	var reason, content strings.Builder
	for _, piece := range []string{"<think>", "let me", " think", "</think>", "answer", " done"} {
		r, c := x.splitThink(piece)
		reason.WriteString(r)
		content.WriteString(c)
	}
	if reason.String() != "let me think" || content.String() != "answer done" {
		t.Fatalf("reason %q content %q", reason.String(), content.String())
	}
	x = newExchange()
	reason.Reset()
	content.Reset()
	for _, piece := range []string{"\n", "<", "think", ">", "alpha", " beta", " <", "/", "think", ">", "\n\nfinal"} {
		r, c := x.splitThink(piece)
		reason.WriteString(r)
		content.WriteString(c)
	}
	if reason.String() != "alpha beta " || content.String() != "\n\nfinal" {
		t.Fatalf("split tags: reason %q content %q", reason.String(), content.String())
	}
	x = newExchange()
	if r, c := x.splitThink("<"); r != "" || c != "" {
		t.Fatalf("undecided prefix leaked: %q %q", r, c)
	}
	if r, c := x.splitThink("b>"); r != "" || c != "<b>" {
		t.Fatalf("non-tag prefix must become Content: %q %q", r, c)
	}
	x = newExchange()
	r, c := x.splitThink("plain <think>not a tag here</think>")
	if r != "" || c != "plain <think>not a tag here</think>" {
		t.Fatalf("think tag not at start must be Content: %q %q", r, c)
	}
	x = newExchange()
	r, c = x.splitThink("\n<think>a</think>b")
	if r != "a" || c != "b" {
		t.Fatalf("one-piece think: %q %q", r, c)
	}
}
