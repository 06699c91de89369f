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
}

// Error is a compile error. Its message is meant for the remark of a
// SUBSCRIPTION_PARSE_FAILED (23) response.
type Error struct {
	Expr string // the expression as given
	Pos  int    // byte offset in Expr where the problem was found
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("Invalid MessageSelector %q: %s (at offset %d)", e.Expr, e.Msg, e.Pos)
}

// Compile parses expr with the grammar and checks of rocketmq-filter's
// SelectorParser (5.x: 4.9.8 plus CONTAINS, STARTSWITH, ENDSWITH). An error
// is an *Error.
func Compile(expr string) (*Expression, error) {
	ps := &parser{lx: lexer{src: expr}}
	root, err := ps.selector()
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Expr = expr
		}
		return nil, err
	}
	return &Expression{text: expr, root: root}, nil
}

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
