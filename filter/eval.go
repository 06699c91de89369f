package filter

import (
	"cmp"
	"strings"
)

// kind is the Java class of a value during evaluation.
type kind uint8

const (
	kNull   kind = iota // null: a missing property, NULL, or an unknown result
	kBool               // java.lang.Boolean
	kString             // java.lang.String (every property value)
	kInt                // java.lang.Integer
	kLong               // java.lang.Long
	kDouble             // java.lang.Double
)

// value is one Java object. Values are passed by value, so evaluation does
// not allocate.
type value struct {
	k kind
	b bool
	i int64 // kInt (within int32) and kLong
	f float64
	s string
}

var (
	nullV  = value{}
	trueV  = value{k: kBool, b: true}
	falseV = value{k: kBool}
)

func boolV(b bool) value {
	if b {
		return trueV
	}
	return falseV
}

func (v value) isNumber() bool { return v.k == kInt || v.k == kLong || v.k == kDouble }

// node is one expression of the tree. eval returns ok=false where Java throws:
// the broker catches the exception and does not deliver the message, so a
// failure anywhere ends the whole evaluation.
type node interface {
	eval(p Properties) (v value, ok bool)
}

// constNode is a literal (ConstantExpression); boolean marks TRUE, FALSE and
// NULL, which are BooleanConstantExpressions.
type constNode struct {
	v       value
	boolean bool
}

func (n *constNode) eval(Properties) (value, bool) { return n.v, true }

// propNode is a property name (PropertyExpression): its value is the
// property's string, or null when the message lacks it.
type propNode struct{ name string }

func (n *propNode) eval(p Properties) (value, bool) {
	if p == nil {
		return nullV, true
	}
	s, found := p.Get(n.name)
	if !found {
		return nullV, true
	}
	return value{k: kString, s: s}, true
}

// negNode is unary minus (UnaryExpression.createNegate): a number is negated
// with Java's overflow rules, anything else becomes null.
type negNode struct{ x node }

func (n *negNode) eval(p Properties) (value, bool) {
	v, ok := n.x.eval(p)
	if !ok {
		return v, false
	}
	switch v.k {
	case kInt:
		v.i = int64(-int32(v.i))
	case kLong:
		v.i = -v.i
	case kDouble:
		v.f = -v.f
	default:
		return nullV, true
	}
	return v, true
}

// notNode is NOT (UnaryExpression.createNOT): null stays null.
type notNode struct{ x node }

func (n *notNode) eval(p Properties) (value, bool) {
	v, ok := n.x.eval(p)
	if !ok || v.k == kNull {
		return v, ok
	}
	return boolV(!v.b), true
}

// castNode is a property used as a condition (UnaryExpression.createBooleanCast):
// null when missing, otherwise FALSE, since a property is never a Boolean.
type castNode struct{ x node }

func (n *castNode) eval(p Properties) (value, bool) {
	v, ok := n.x.eval(p)
	if !ok || v.k == kNull {
		return v, ok
	}
	return boolV(v.k == kBool && v.b), true
}

// andNode and orNode are LogicExpression: three-valued, short-circuit, left
// to right. Java builds a left-deep binary tree for "a AND b AND c"; the
// parser flattens a chain into one node with every operand, which evaluates
// the same (each operand in order, the first failure or deciding value
// ends it) but keeps a long OR list from making the tree, and so the
// evaluation's recursion, as deep as the list is long.
type andNode struct{ xs []node }

func (n *andNode) eval(p Properties) (value, bool) {
	null := false
	for _, x := range n.xs {
		v, ok := x.eval(p)
		if !ok {
			return v, false
		}
		if v.k == kBool && !v.b {
			return falseV, true
		}
		null = null || v.k == kNull
	}
	if null {
		return nullV, true
	}
	return trueV, true
}

type orNode struct{ xs []node }

func (n *orNode) eval(p Properties) (value, bool) {
	null := false
	for _, x := range n.xs {
		v, ok := x.eval(p)
		if !ok {
			return v, false
		}
		if v.k == kBool && v.b {
			return trueV, true
		}
		null = null || v.k == kNull
	}
	if null {
		return nullV, true
	}
	return falseV, true
}

// eqNode is ComparisonExpression.doCreateEqual (=, and IS NULL against the
// NULL constant). Both sides are evaluated; if exactly one is null the result
// is null when the left one is, FALSE when the right one is; two nulls are
// equal; otherwise the values are compared with compareJava.
type eqNode struct{ l, r node }

func (n *eqNode) eval(p Properties) (value, bool) {
	lv, ok := n.l.eval(p)
	if !ok {
		return lv, false
	}
	rv, ok := n.r.eval(p)
	if !ok {
		return rv, false
	}
	if lv.k == kNull || rv.k == kNull {
		if lv.k == kNull && rv.k == kNull {
			return trueV, true
		}
		if lv.k == kNull {
			return nullV, true
		}
		return falseV, true
	}
	c, ok := compareJava(lv, rv)
	if !ok {
		return nullV, false
	}
	return boolV(c == 0), true
}

// cmpOp is one of > >= < <=.
type cmpOp uint8

const (
	opGt cmpOp = iota
	opGe
	opLt
	opLe
)

// cmpNode is ComparisonExpression.evaluate for > >= < <=: a null left side
// gives null before the right side is evaluated; two strings (two properties)
// are both read as Double.valueOf; otherwise compareJava.
type cmpNode struct {
	op   cmpOp
	l, r node
}

func (n *cmpNode) eval(p Properties) (value, bool) {
	lv, ok := n.l.eval(p)
	if !ok || lv.k == kNull {
		return lv, ok
	}
	rv, ok := n.r.eval(p)
	if !ok || rv.k == kNull {
		return rv, ok
	}
	var c int
	if lv.k == kString && rv.k == kString {
		lf, ok1 := javaParseDouble(lv.s)
		rf, ok2 := javaParseDouble(rv.s)
		if !ok1 || !ok2 {
			return nullV, false
		}
		c = javaCompareDouble(lf, rf)
	} else {
		c, ok = compareJava(lv, rv)
		if !ok {
			return nullV, false
		}
	}
	switch n.op {
	case opGt:
		return boolV(c > 0), true
	case opGe:
		return boolV(c >= 0), true
	case opLt:
		return boolV(c < 0), true
	}
	return boolV(c <= 0), true
}

// compareJava is ComparisonExpression.__compare with string conversion on
// (the parser always turns it on), for two non-null values. Same classes
// compare directly (Integer, Long, Double, String, Boolean). Numbers widen
// Integer → Long → Double. A String meeting a number or a Boolean is
// converted to the other side's class with Integer/Long/Double/Boolean.valueOf;
// a conversion that throws makes ok false. A Boolean on the left meeting a
// String throws too (Java casts the Boolean to String: ClassCastException).
// Any other pair of classes compares as -1.
func compareJava(lv, rv value) (int, bool) {
	if lv.k == rv.k {
		switch lv.k {
		case kBool:
			return compareBool(lv.b, rv.b), true
		case kString:
			return compareUTF16(lv.s, rv.s), true
		case kInt, kLong:
			return cmp.Compare(lv.i, rv.i), true
		}
		return javaCompareDouble(lv.f, rv.f), true
	}
	switch lv.k {
	case kBool:
		if rv.k == kString {
			return 0, false
		}
		return -1, true
	case kInt, kLong:
		switch rv.k {
		case kInt, kLong:
			return cmp.Compare(lv.i, rv.i), true
		case kDouble:
			return javaCompareDouble(float64(lv.i), rv.f), true
		case kString:
			r, ok := convertString(rv.s, lv.k)
			if !ok {
				return 0, false
			}
			return cmp.Compare(lv.i, r.i), true
		}
		return -1, true
	case kDouble:
		switch rv.k {
		case kInt, kLong:
			return javaCompareDouble(lv.f, float64(rv.i)), true
		case kString:
			r, ok := convertString(rv.s, kDouble)
			if !ok {
				return 0, false
			}
			return javaCompareDouble(lv.f, r.f), true
		}
		return -1, true
	case kString:
		if rv.k == kNull {
			return -1, true
		}
		l, ok := convertString(lv.s, rv.k)
		if !ok {
			return 0, false
		}
		return compareJava(l, rv)
	}
	return -1, true
}

// convertString is Integer.valueOf, Long.valueOf, Double.valueOf or
// Boolean.valueOf of s, by the target class k.
func convertString(s string, k kind) (value, bool) {
	switch k {
	case kBool:
		return boolV(javaParseBoolean(s)), true
	case kInt:
		i, ok := javaParseInt(s, 32)
		return value{k: kInt, i: i}, ok
	case kLong:
		i, ok := javaParseInt(s, 64)
		return value{k: kLong, i: i}, ok
	case kDouble:
		f, ok := javaParseDouble(s)
		return value{k: kDouble, f: f}, ok
	}
	return value{}, false
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// compareUTF16 orders strings as String.compareTo does; only its sign and
// zero are ever used, and zero means equal bytes.
func compareUTF16(a, b string) int {
	return strings.Compare(a, b)
}

// inNode is [NOT] IN (UnaryExpression.createInExpression): null when the
// property is missing, otherwise membership (negated for NOT IN).
type inNode struct {
	x    *propNode
	list []string
	set  map[string]struct{} // for five values or more, as Java's HashSet
	not  bool
}

func (n *inNode) eval(p Properties) (value, bool) {
	v, ok := n.x.eval(p)
	if !ok || v.k != kString {
		return nullV, ok
	}
	found := false
	if n.set != nil {
		_, found = n.set[v.s]
	} else {
		for _, s := range n.list {
			if s == v.s {
				found = true
				break
			}
		}
	}
	return boolV(found != n.not), true
}

// strOp is one of CONTAINS, STARTSWITH, ENDSWITH (5.x).
type strOp uint8

const (
	opContains strOp = iota
	opStartsWith
	opEndsWith
)

// strNode is [NOT] CONTAINS/STARTSWITH/ENDSWITH (5.x ComparisonExpression's
// ContainsExpression and siblings): FALSE, never null, when the search string
// is empty (checked first), when the operand is null, or when it is not a
// string — for the NOT forms too.
type strNode struct {
	op     strOp
	not    bool
	x      node
	search string
}

func (n *strNode) eval(p Properties) (value, bool) {
	if n.search == "" {
		return falseV, true
	}
	v, ok := n.x.eval(p)
	if !ok {
		return v, false
	}
	if v.k != kString {
		return falseV, true
	}
	var r bool
	switch n.op {
	case opContains:
		r = strings.Contains(v.s, n.search)
	case opStartsWith:
		r = strings.HasPrefix(v.s, n.search)
	default:
		r = strings.HasSuffix(v.s, n.search)
	}
	return boolV(r != n.not), true
}
