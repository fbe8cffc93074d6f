package pyrandom_test

import "math/big"

// bigInt 是 big.Int 的别名，便于测试中解析 Python 的大整数种子。
type bigInt = big.Int
