package functional

// DivergenceForTest 是 compareStream 结果的导出视图（只给测试用）。
type DivergenceForTest struct {
	Equal         bool
	Token, Tokens int
	Share         float64
	Dropped       string
}

// CompareStreamForTest 导出 compareStream 给外部测试包。
func CompareStreamForTest(pieces []string, want string) DivergenceForTest {
	d := compareStream(pieces, want)
	return DivergenceForTest{Equal: d.equal, Token: d.token, Tokens: d.tokens, Share: d.share, Dropped: d.dropped}
}
