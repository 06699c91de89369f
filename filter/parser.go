package filter

import (
	"fmt"
	"math"
	"strconv"
)

// parser is a recursive-descent rendering of SelectorParser.jj (5.x), with
// the checks of the Java create* methods applied as each node is built.
// It peeks at one token, and at two where the grammar says LOOKAHEAD(2)
// (IS NULL, NOT BETWEEN/IN/CONTAINS/STARTSWITH/ENDSWITH), as the generated
// Java parser does; see lexer for why that matters.
type parser struct {
	lx    lexer
	toks  [2]token // peeked tokens
	n     int      // how many of toks are valid
	depth int      // open parentheses and unary operators: the recursion
}

// enter counts one level of recursion (a parenthesis or a unary operator)
// and refuses the MaxExpressionDepth+1st, so that no input recurses deeper;
// leave undoes it.
func (ps *parser) enter(pos int) error {
	if ps.depth++; ps.depth > MaxExpressionDepth {
		return tooDeep(pos)
	}
	return nil
}

func (ps *parser) leave() { ps.depth-- }

func (ps *parser) fill(k int) error {
	for ps.n < k {
		t, err := ps.lx.next()
		if err != nil {
			return err
		}
		ps.toks[ps.n] = t
		ps.n++
	}
	return nil
}

// peek returns the kind of the k-th next token (k is 1 or 2).
func (ps *parser) peek(k int) (tokKind, error) {
	if err := ps.fill(k); err != nil {
		return tEOF, err
	}
	return ps.toks[k-1].kind, nil
}

func (ps *parser) take() (token, error) {
	if err := ps.fill(1); err != nil {
		return token{}, err
	}
	t := ps.toks[0]
	ps.toks[0] = ps.toks[1]
	ps.n--
	return t, nil
}

func (ps *parser) expect(k tokKind) (token, error) {
	t, err := ps.take()
	if err != nil {
		return t, err
	}
	if t.kind != k {
		return t, unexpected(t, k.String())
	}
	return t, nil
}

func unexpected(t token, want string) error {
	got := t.kind.String()
	if t.kind != tEOF {
		got = fmt.Sprintf("%s %q", got, t.text)
	}
	return &Error{Pos: t.pos, Msg: fmt.Sprintf("encountered %s, was expecting %s", got, want)}
}

func semantic(pos int, format string, args ...any) error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// JmsSelector: orExpression, as a boolean. Whatever follows is ignored.
func (ps *parser) selector() (node, error) {
	pos := ps.lx.pos
	x, err := ps.orExpr()
	if err != nil {
		return nil, err
	}
	return asBoolean(x, pos)
}

// asBoolean is SelectorParser.asBooleanExpression: a boolean expression
// stays, a property becomes a boolean cast, anything else is an error.
func asBoolean(x node, pos int) (node, error) {
	if isBooleanExpr(x) {
		return x, nil
	}
	if _, ok := x.(*propNode); ok {
		return &castNode{x: x}, nil
	}
	return nil, semantic(pos, "expression will not result in a boolean value: %s", describe(x))
}

// isBooleanExpr: the node's Java class implements BooleanExpression.
func isBooleanExpr(x node) bool {
	switch x := x.(type) {
	case *constNode:
		return x.boolean
	case *propNode, *negNode:
		return false
	}
	return true
}

func describe(x node) string {
	switch x := x.(type) {
	case *constNode:
		switch x.v.k {
		case kNull:
			return "NULL"
		case kBool:
			if x.v.b {
				return "TRUE"
			}
			return "FALSE"
		case kString:
			return strconv.Quote(x.v.s)
		case kDouble:
			return strconv.FormatFloat(x.v.f, 'g', -1, 64)
		}
		return strconv.FormatInt(x.v.i, 10)
	case *propNode:
		return x.name
	case *negNode:
		return "-" + describe(x.x)
	}
	return "a boolean expression"
}

func (ps *parser) orExpr() (node, error) {
	return ps.logicChain(tOr, ps.andExpr, func(xs []node) node { return &orNode{xs: xs} })
}

func (ps *parser) andExpr() (node, error) {
	return ps.logicChain(tAnd, ps.equalityExpr, func(xs []node) node { return &andNode{xs: xs} })
}

// logicChain parses operand ( op operand )*, every operand cast to boolean as
// LogicExpression.create{OR,AND} does, in Java's order (the right operand is
// parsed, then the left one cast, then the right one), into one node over
// all operands (see andNode).
func (ps *parser) logicChain(op tokKind, operand func() (node, error), combine func(xs []node) node) (node, error) {
	left, err := operand()
	if err != nil {
		return nil, err
	}
	var xs []node
	for {
		k, err := ps.peek(1)
		if err != nil {
			return nil, err
		}
		if k != op {
			break
		}
		t, _ := ps.take()
		right, err := operand()
		if err != nil {
			return nil, err
		}
		if xs == nil {
			if left, err = asBoolean(left, t.pos); err != nil {
				return nil, err
			}
			xs = append(xs, left)
		}
		if right, err = asBoolean(right, t.pos); err != nil {
			return nil, err
		}
		xs = append(xs, right)
	}
	if xs == nil {
		return left, nil
	}
	return combine(xs), nil
}

// equalityExpr: comparisonExpression ( "=" c | "<>" c | IS NULL | IS NOT NULL )*
func (ps *parser) equalityExpr() (node, error) {
	left, err := ps.comparisonExpr()
	if err != nil {
		return nil, err
	}
	for {
		k, err := ps.peek(1)
		if err != nil {
			return nil, err
		}
		switch k {
		case tEq, tNe:
			t, _ := ps.take()
			right, err := ps.comparisonExpr()
			if err != nil {
				return nil, err
			}
			if left, err = createEqual(left, right, t.pos); err != nil {
				return nil, err
			}
			if k == tNe {
				left = &notNode{x: left}
			}
		case tIs:
			ps.take()
			next, err := ps.take()
			if err != nil {
				return nil, err
			}
			not := false
			if next.kind == tNot {
				not = true
				if next, err = ps.take(); err != nil {
					return nil, err
				}
			}
			if next.kind != tNull {
				if not {
					return nil, unexpected(next, "NULL")
				}
				return nil, unexpected(next, "NULL or NOT NULL")
			}
			left = &eqNode{l: left, r: &constNode{boolean: true}}
			if not {
				left = &notNode{x: left}
			}
		default:
			return left, nil
		}
	}
}

// comparisonExpression: unaryExpr ( > u | >= u | < u | <= u | [NOT] CONTAINS s
// | [NOT] STARTSWITH s | [NOT] ENDSWITH s | [NOT] BETWEEN u AND u
// | [NOT] IN ( s, ... ) )*
func (ps *parser) comparisonExpr() (node, error) {
	left, err := ps.unaryExpr()
	if err != nil {
		return nil, err
	}
	for {
		k, err := ps.peek(1)
		if err != nil {
			return nil, err
		}
		not := false
		switch k {
		case tGt, tGe, tLt, tLe:
			t, _ := ps.take()
			right, err := ps.unaryExpr()
			if err != nil {
				return nil, err
			}
			op := opGt
			switch k {
			case tGe:
				op = opGe
			case tLt:
				op = opLt
			case tLe:
				op = opLe
			}
			if left, err = createCompare(op, left, right, t.pos); err != nil {
				return nil, err
			}
			continue
		case tNot:
			k2, err := ps.peek(2)
			if err != nil {
				return nil, err
			}
			switch k2 {
			case tContains, tStartsWith, tEndsWith, tBetween, tIn:
			default:
				return nil, unexpected(ps.toks[1], "CONTAINS, STARTSWITH, ENDSWITH, BETWEEN or IN after NOT")
			}
			ps.take()
			not, k = true, k2
		case tContains, tStartsWith, tEndsWith, tBetween, tIn:
		default:
			return left, nil
		}
		t, _ := ps.take()
		switch k {
		case tContains, tStartsWith, tEndsWith:
			s, err := ps.expect(tString)
			if err != nil {
				return nil, err
			}
			op := opContains
			switch k {
			case tStartsWith:
				op = opStartsWith
			case tEndsWith:
				op = opEndsWith
			}
			left = &strNode{op: op, not: not, x: left, search: decodeString(s.text)}
		case tBetween:
			low, err := ps.unaryExpr()
			if err != nil {
				return nil, err
			}
			if _, err := ps.expect(tAnd); err != nil {
				return nil, err
			}
			high, err := ps.unaryExpr()
			if err != nil {
				return nil, err
			}
			if left, err = createBetween(left, low, high, not, t.pos); err != nil {
				return nil, err
			}
		case tIn:
			if _, err := ps.expect(tLParen); err != nil {
				return nil, err
			}
			var list []string
			for {
				s, err := ps.expect(tString)
				if err != nil {
					return nil, err
				}
				list = append(list, decodeString(s.text))
				k, err := ps.peek(1)
				if err != nil {
					return nil, err
				}
				if k != tComma {
					break
				}
				ps.take()
			}
			if _, err := ps.expect(tRParen); err != nil {
				return nil, err
			}
			prop, ok := left.(*propNode)
			if !ok {
				return nil, semantic(t.pos, "expected a property for In expression, got: %s", describe(left))
			}
			in := &inNode{x: prop, list: list, not: not}
			if len(list) >= 5 {
				in.set = make(map[string]struct{}, len(list))
				for _, s := range list {
					in.set[s] = struct{}{}
				}
			}
			left = in
		}
	}
}

// unaryExpr: "+" unaryExpr | "-" unaryExpr | NOT unaryExpr | primaryExpr
func (ps *parser) unaryExpr() (node, error) {
	k, err := ps.peek(1)
	if err != nil {
		return nil, err
	}
	if k != tPlus && k != tMinus && k != tNot {
		return ps.primaryExpr()
	}
	t, _ := ps.take()
	if err := ps.enter(t.pos); err != nil {
		return nil, err
	}
	defer ps.leave()
	switch k {
	case tPlus:
		return ps.unaryExpr()
	case tMinus:
		x, err := ps.unaryExpr()
		if err != nil {
			return nil, err
		}
		return &negNode{x: x}, nil
	default: // tNot
		x, err := ps.unaryExpr()
		if err != nil {
			return nil, err
		}
		if x, err = asBoolean(x, t.pos); err != nil {
			return nil, err
		}
		return &notNode{x: x}, nil
	}
}

// primaryExpr: literal | ID | "(" orExpression ")"
func (ps *parser) primaryExpr() (node, error) {
	t, err := ps.take()
	if err != nil {
		return nil, err
	}
	switch t.kind {
	case tString:
		return &constNode{v: value{k: kString, s: decodeString(t.text)}}, nil
	case tDecimal:
		return createFromDecimal(t)
	case tFloat:
		return createFloat(t)
	case tTrue:
		return &constNode{v: trueV, boolean: true}, nil
	case tFalse:
		return &constNode{v: falseV, boolean: true}, nil
	case tNull:
		return &constNode{boolean: true}, nil
	case tID:
		return &propNode{name: t.text}, nil
	case tLParen:
		if err := ps.enter(t.pos); err != nil {
			return nil, err
		}
		x, err := ps.orExpr()
		ps.leave()
		if err != nil {
			return nil, err
		}
		if _, err := ps.expect(tRParen); err != nil {
			return nil, err
		}
		return x, nil
	}
	return nil, unexpected(t, "a literal, a property or \"(\"")
}

// createFromDecimal is ConstantExpression.createFromDecimal: the L suffix is
// dropped, the digits must fit a long, and a value within int range is an
// Integer even with the suffix ("5L" is the Integer 5).
func createFromDecimal(t token) (node, error) {
	text := t.text
	if c := text[len(text)-1]; c == 'l' || c == 'L' {
		text = text[:len(text)-1]
	}
	i, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return nil, semantic(t.pos, "number %s is out of the range of a long", t.text)
	}
	if math.MinInt32 <= i && i <= math.MaxInt32 {
		return &constNode{v: value{k: kInt, i: i}}, nil
	}
	return &constNode{v: value{k: kLong, i: i}}, nil
}

// createFloat is ConstantExpression.createFloat: new Double(text), which
// must be at most Double.MAX_VALUE and at least Double.MIN_VALUE (4.9E-324,
// the smallest positive value). So 0.0, 0e5 and 1e-400 are rejected.
func createFloat(t token) (node, error) {
	f, ok := javaParseDouble(t.text)
	if !ok {
		return nil, semantic(t.pos, "invalid number %s", t.text)
	}
	if f > math.MaxFloat64 {
		return nil, semantic(t.pos, "%s is greater than %v", t.text, math.MaxFloat64)
	}
	if f < math.SmallestNonzeroFloat64 {
		return nil, semantic(t.pos, "%s is less than %v (Java rejects a zero float literal)", t.text, math.SmallestNonzeroFloat64)
	}
	return &constNode{v: value{k: kDouble, f: f}}, nil
}

// createEqual is ComparisonExpression.createEqual: neither side may be the
// NULL constant, and when both are constants a boolean one on the left needs
// a boolean one on the right.
func createEqual(l, r node, pos int) (node, error) {
	for _, x := range [2]node{l, r} {
		if c, ok := x.(*constNode); ok && c.v.k == kNull {
			return nil, semantic(pos, "'%s' cannot be compared", describe(x))
		}
	}
	lc, lok := l.(*constNode)
	rc, rok := r.(*constNode)
	if lok && rok && lc.boolean && !rc.boolean {
		return nil, semantic(pos, "'%s' cannot be compared with '%s'", describe(l), describe(r))
	}
	return &eqNode{l: l, r: r}, nil
}

// createCompare is createGreaterThan and its siblings: each side must not be
// a non-numeric constant nor a boolean expression (checkLessThanOperand).
func createCompare(op cmpOp, l, r node, pos int) (node, error) {
	for _, x := range [2]node{l, r} {
		if c, ok := x.(*constNode); ok {
			if !c.v.isNumber() {
				return nil, semantic(pos, "value '%s' cannot be compared", describe(x))
			}
			continue
		}
		if isBooleanExpr(x) {
			return nil, semantic(pos, "value '%s' cannot be compared", describe(x))
		}
	}
	return &cmpNode{op: op, l: l, r: r}, nil
}

// createBetween is createBetween (x >= low AND x <= high) and createNotBetween
// (x < low OR x > high). Only BETWEEN checks constant bounds: neither may be
// NULL and high must not compare below low. A negative bound like -5 is no
// constant (it is a negation), so "BETWEEN 5 AND -5" compiles.
func createBetween(x, low, high node, not bool, pos int) (node, error) {
	if not {
		lt, err := createCompare(opLt, x, low, pos)
		if err != nil {
			return nil, err
		}
		gt, err := createCompare(opGt, x, high, pos)
		if err != nil {
			return nil, err
		}
		return &orNode{xs: []node{lt, gt}}, nil
	}
	lc, lok := low.(*constNode)
	hc, hok := high.(*constNode)
	if lok && hok {
		if lc.v.k == kNull || hc.v.k == kNull {
			return nil, semantic(pos, "illegal values of between, values can not be null")
		}
		c, ok := compareJava(hc.v, lc.v)
		if !ok {
			return nil, semantic(pos, "illegal values of between: %s and %s cannot be compared", describe(low), describe(high))
		}
		if c < 0 {
			return nil, semantic(pos, "illegal values of between, left value(%s) must less than or equal to right value(%s)", describe(low), describe(high))
		}
	}
	ge, err := createCompare(opGe, x, low, pos)
	if err != nil {
		return nil, err
	}
	le, err := createCompare(opLe, x, high, pos)
	if err != nil {
		return nil, err
	}
	return &andNode{xs: []node{ge, le}}, nil
}
