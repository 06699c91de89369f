package filter

import "fmt"

// Properties is a message's property lookup: the value of key and whether the
// message has it. The broker adapts its stored-properties reader to it, so no
// map is built per message.
type Properties interface {
	Get(key string) (string, bool)
}

// Map is Properties over a map.
type Map map[string]string

// Get implements Properties.
func (m Map) Get(key string) (string, bool) {
	v, ok := m[key]
	return v, ok
}

// Func is Properties over a function.
type Func func(key string) (string, bool)

// Get implements Properties.
func (f Func) Get(key string) (string, bool) { return f(key) }

// Expression is a compiled SQL92 filter. It is immutable and safe for
// concurrent use.
type Expression struct {
	text string
	root node
	size int // estimated heap bytes of root
}

// Error is a compile error. Its message is meant for the remark of a
// SUBSCRIPTION_PARSE_FAILED (23) response.
type Error struct {
	Expr string // the expression as given
	Pos  int    // byte offset in Expr where the problem was found
	Msg  string

	limit bool // over MaxExpressionLength or MaxExpressionDepth
}

// limitQuote is how much of an expression over a limit the message quotes:
// the remark must not echo a request of megabytes.
const limitQuote = 64

func (e *Error) Error() string {
	if e.limit {
		q := e.Expr
		if len(q) > limitQuote {
			q = q[:limitQuote]
		}
		return fmt.Sprintf("Invalid MessageSelector of %d bytes starting %q: %s (at offset %d)", len(e.Expr), q, e.Msg, e.Pos)
	}
	return fmt.Sprintf("Invalid MessageSelector %q: %s (at offset %d)", e.Expr, e.Msg, e.Pos)
}

// Unwrap makes errors.Is(err, ErrLimit) true for an expression over a limit.
func (e *Error) Unwrap() error {
	if e.limit {
		return ErrLimit
	}
	return nil
}

// Compile parses expr with the grammar and checks of rocketmq-filter's
// SelectorParser (5.x: 4.9.8 plus CONTAINS, STARTSWITH, ENDSWITH), within
// MaxExpressionLength and MaxExpressionDepth. An error is an *Error, and
// errors.Is(err, ErrLimit) tells an expression over a limit. Its time is
// linear in len(expr).
func Compile(expr string) (*Expression, error) {
	e, _, err := compile(expr)
	return e, err
}

// compile is Compile, also returning the bytes the lexer examined (for the
// test that holds the lexer linear).
func compile(expr string) (*Expression, int, error) {
	if len(expr) > MaxExpressionLength {
		return nil, 0, tooLong(expr)
	}
	ps := &parser{lx: lexer{src: expr}}
	root, err := ps.selector()
	if err == nil {
		// The parser bounds its own recursion; chained comparisons
		// ("a = b = c ...") deepen the tree without it.
		h, size := measure(root)
		if h > MaxExpressionDepth {
			err = tooDeep(0)
		}
		if err == nil {
			return &Expression{text: expr, root: root, size: size}, ps.lx.steps, nil
		}
	}
	if e, ok := err.(*Error); ok {
		e.Expr = expr
	}
	return nil, ps.lx.steps, err
}

// Footprint estimates the bytes the expression holds: its text and its
// compiled tree. Caches of compiled expressions bound themselves by it.
func (e *Expression) Footprint() int { return len(e.text) + e.size }

// String returns the expression's source text.
func (e *Expression) String() string { return e.text }

// Result is the outcome of an evaluation.
type Result uint8

const (
	// False: the expression is FALSE.
	False Result = iota
	// True: the expression is TRUE; only this delivers the message.
	True
	// Unknown: the expression is null (SQL unknown), typically because a
	// property it needs is missing.
	Unknown
	// Failed: Java would throw while evaluating (a property that does not
	// convert to the literal's type, for one); the broker catches it and does
	// not deliver the message.
	Failed
)

func (r Result) String() string {
	switch r {
	case False:
		return "FALSE"
	case True:
		return "TRUE"
	case Unknown:
		return "NULL"
	}
	return "FAILED"
}

// Evaluate evaluates the expression against a message's properties. A nil
// p is a message without properties.
func (e *Expression) Evaluate(p Properties) Result {
	v, ok := e.root.eval(p)
	switch {
	case !ok:
		return Failed
	case v.k == kBool && v.b:
		return True
	case v.k == kBool:
		return False
	}
	return Unknown
}

// Match reports whether the broker delivers a message with these properties:
// the expression evaluates to TRUE. It does not allocate.
func (e *Expression) Match(p Properties) bool {
	v, ok := e.root.eval(p)
	return ok && v.k == kBool && v.b
}
