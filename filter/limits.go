package filter

import (
	"errors"
	"fmt"
)

// The limits of an expression (see "Limits" in doc.go). Java's generated
// SelectorParser has none: its recursion ends in a StackOverflowError, which
// the broker's catch (Throwable) turns into "no filter". A Go stack overflow
// is fatal to the whole process and no recover catches it, so the parser
// refuses first. Both limits are far beyond any subscription written by hand
// or generated sensibly: an IN list of a thousand 40-byte ids fits the length,
// and an expression nests a few levels deep, where a long OR list, flattened
// into one node, counts one.
const (
	// MaxExpressionLength is the longest expression Compile accepts, in bytes.
	MaxExpressionLength = 64 << 10
	// MaxExpressionDepth bounds the nesting: parentheses and unary + - NOT
	// while parsing, and the height of the compiled tree (each unary
	// operator, comparison, chained = or <>, and AND or OR over nested
	// operands adds a level).
	MaxExpressionDepth = 256
)

// ErrLimit is what errors.Is finds in a compile error that reports an
// expression over MaxExpressionLength or MaxExpressionDepth, so that a caller
// can answer it apart from an ordinary syntax error.
var ErrLimit = errors.New("filter expression over a limit")

func tooLong(expr string) *Error {
	return &Error{Expr: expr, Pos: MaxExpressionLength, limit: true,
		Msg: fmt.Sprintf("the expression is %d bytes long; the limit is %d bytes", len(expr), MaxExpressionLength)}
}

func tooDeep(pos int) *Error {
	return &Error{Pos: pos, limit: true,
		Msg: fmt.Sprintf("the expression nests deeper than the limit of %d levels", MaxExpressionDepth)}
}

// nodeCost is an estimate of one node's heap bytes (the struct, its
// interface header and allocation rounding), for Expression.Footprint.
const nodeCost = 64

// measure walks the tree without recursion and returns its height, capped
// just above MaxExpressionDepth (the walk stops there), and an estimate of
// its heap bytes beyond the source text. The tree is as large as the text at
// most, so the walk is linear.
func measure(root node) (height, bytes int) {
	type item struct {
		n node
		d int
	}
	stack := []item{{root, 1}}
	push := func(d int, xs ...node) {
		for _, x := range xs {
			stack = append(stack, item{x, d + 1})
		}
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		height = max(height, it.d)
		if height > MaxExpressionDepth {
			return height, bytes
		}
		bytes += nodeCost
		switch n := it.n.(type) {
		case *negNode:
			push(it.d, n.x)
		case *notNode:
			push(it.d, n.x)
		case *castNode:
			push(it.d, n.x)
		case *andNode:
			bytes += 16 * len(n.xs)
			push(it.d, n.xs...)
		case *orNode:
			bytes += 16 * len(n.xs)
			push(it.d, n.xs...)
		case *eqNode:
			push(it.d, n.l, n.r)
		case *cmpNode:
			push(it.d, n.l, n.r)
		case *strNode:
			bytes += len(n.search)
			push(it.d, n.x)
		case *inNode:
			// The list's headers, and the set's buckets and keys; a value
			// with a doubled quote is a copy of its literal.
			bytes += 16 * len(n.list)
			if n.set != nil {
				bytes += 48 * len(n.list)
			}
			push(it.d, n.x)
		}
	}
	return height, bytes
}
