//go:build !unix

package h1

// alive 在没有 MSG_PEEK 的平台上总是返回 true：陈旧的连接由 Session.RoundTrip 的一次重发兜底。
func (c *Conn) alive() bool { return true }
