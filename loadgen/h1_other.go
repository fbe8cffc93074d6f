//go:build !unix

package loadgen

// alive 在没有 MSG_PEEK 的平台上总是返回 true：陈旧的连接由 h1RoundTrip 的一次重发兜底。
func (c *h1Conn) alive() bool { return true }
