// Package filter is the SQL92 message filter of the broker: consumers
// subscribing with MessageSelector.bySql (Java) or consumer.SQL92 (Go) get
// only the messages whose properties make the expression TRUE. It follows the
// Java broker's rocketmq-filter module, 4.9.8, plus the string operators of
// 5.3.3, quirks included, because a subscription must select the same
// messages on rmq as on a Java broker. It imports no other package of this
// module.
//
//	e, err := filter.Compile("region = 'eu' AND price > 10")  // once per subscription
//	ok := e.Match(props)                                       // per message; no allocation
//
// testdata/cases.json is the truth table: expressions, property sets and
// expected results (TRUE, FALSE, NULL, FAILED), and expressions that must not
// compile. TestCasesTable holds this package to it, and the Java suite's
// Client5FilterDifferentialTest (integration/java) holds rocketmq-filter to
// the same file.
//
// # Grammar (parser/SelectorParser.jj)
//
// Lowest to highest precedence:
//
//	OR
//	AND
//	=  <>  IS NULL  IS NOT NULL
//	>  >=  <  <=  [NOT] BETWEEN x AND y  [NOT] IN ('s', ...)  [NOT] CONTAINS|STARTSWITH|ENDSWITH 's'
//	unary + - NOT
//	literal, property, ( expression )
//
// Keywords are case-insensitive; property names ([A-Za-z_$][A-Za-z0-9_$]*,
// ASCII only) are case-sensitive; strings are '...' where a doubled quote stands for one; white
// space is space, tab, CR, LF and FF; comments are "-- ... <line end>" and
// "/* ... */". A decimal literal is an Integer when it fits 32 bits, else a
// Long; a literal with a point or an exponent is a Double. There is no
// arithmetic, no LIKE, no != and no ==.
//
// # Oddities kept from Java
//
// Parsing (SelectorParser.jj and the generated SelectorParser.java):
//
//   - The parser stops after the first complete expression: JmsSelector has no
//     <EOF>. "a = 'x' b", "a = 'x' )" and "a-b = 'x'" (which is just the
//     property a, see below) compile; only the token right after the
//     expression is lexed, so "a = 'x' #" fails but "a = 'x' b #" does not.
//     After an operand, NOT and IS commit: "a NOT b" and "a IS 5" fail.
//   - The lexer takes the longest match: "007" is 0 then 07, "0L" is 0 then
//     the name L, "5e" is 5 then the name e, "1.5.5" is 1.5 then .5 — each
//     followed by an ignored rest. A line comment needs its line end: "a = --1"
//     at the very end is a = -(-1), with a line break the 1 is commented out.
//   - A lone property is a boolean cast (UnaryExpression.createBooleanCast):
//     null without the property, else FALSE, because property values are
//     Strings, never Booleans. So "flag" never matches; write flag = TRUE.
//     And "NOT flag" matches every message that has flag.
//   - NOT binds tighter than comparisons: "NOT a = 'x'" is (NOT a) = 'x',
//     which throws when evaluated (below) and never matches; "NOT a > 5" and
//     "NOT a IN (...)" do not compile. Write NOT (a = 'x').
//   - TRUE, FALSE and NULL alone compile (BooleanConstantExpression); TRUE
//     matches everything. A string or number alone does not compile.
//   - ConstantExpression.createFromDecimal: "5L" is the Integer 5 (the suffix
//     only matters beyond int range); 9223372036854775808 fails, so
//     Long.MIN_VALUE cannot be written.
//   - ConstantExpression.createFloat rejects values above Double.MAX_VALUE and
//     below Double.MIN_VALUE (4.9E-324): the literal 0.0 (and .0, 0e5, 1e-400)
//     does not compile. Use 0 or a negative bound.
//   - ComparisonExpression.createEqual: NULL may not be compared with = or <>
//     (use IS NULL); TRUE = 5 fails while 5 = TRUE compiles (and is FALSE).
//   - checkLessThanOperand: > >= < <= BETWEEN take no string, boolean or NULL
//     constant and no boolean expression, so "a > 'x'" fails.
//   - createBetween checks constant bounds (low <= high) but -5 is a negation,
//     not a constant: "a BETWEEN 5 AND -1" compiles and never matches; NOT
//     BETWEEN checks nothing.
//   - IN lists hold string literals only, and need a property on the left.
//   - The 5.x keywords CONTAINS, STARTSWITH, ENDSWITH cannot be property names
//     (they can in 4.9.8, which lacks the operators).
//
// Evaluation (ComparisonExpression, UnaryExpression, LogicExpression,
// ConstantExpression; the broker's ExpressionMessageFilter):
//
//   - A missing property is null. Comparisons with null are null, NOT null is
//     null, AND/OR are three-valued. Only TRUE delivers, so "a <> 'x'" and
//     "a NOT IN (...)" never match a message without a; "a IS NULL" does.
//   - doCreateEqual: when only the right side is null the result is FALSE, not
//     null: "'x' <> a" matches messages without a. Two nulls are equal:
//     "a = b" is TRUE when both are missing, and "a = -'x'" (a negated string
//     is null) matches messages without a.
//   - = first compares equal values, then converts: a String meeting an
//     Integer, Long, Double or Boolean is converted with Integer.valueOf,
//     Long.valueOf, Double.valueOf or Boolean.valueOf, whichever side it is
//     on. Numbers widen Integer → Long → Double. So a = 5 is TRUE for "5",
//     "+5", "005" and "٥" (any BMP Unicode digit) and throws for "5.0", " 5",
//     "3000000000" or "abc"; a = 5.0 is TRUE for "5", " 5 ", "5e0", "5d",
//     "0x1.4p2"; a = TRUE is TRUE for "true" in any case, and a = FALSE is TRUE
//     for anything else.
//   - A conversion that fails throws; the broker catches it and does not
//     deliver the message (Evaluate reports Failed). A failure anywhere
//     aborts the whole expression: "a = 5 OR b = 'x'" does not match a="abc",
//     b="x", while "b = 'x' OR a = 5" does (OR and AND short-circuit).
//   - A Boolean on the left meeting a String throws (Java casts the Boolean
//     to String): "TRUE = a" never matches, "a = TRUE" does.
//   - > >= < <= between two strings (two properties) read both with
//     Double.valueOf. A relational comparison with a null left side is null
//     before the right side is evaluated.
//   - Doubles compare with Double.compareTo: NaN is above everything, so
//     a > 1.0 is TRUE for "NaN"; -0.0 is below 0.0.
//   - Negation of anything but a number is null.
//   - 5.x CONTAINS, STARTSWITH, ENDSWITH and their NOT forms are FALSE, never
//     null, for a missing or non-string operand and for an empty search
//     string: "a NOT CONTAINS 'x'" does not match a message without a, but
//     "NOT (a CONTAINS 'x')" does.
//
// # Limits
//
// Java's generated parser has no limit of its own: a deep enough expression
// ends in a StackOverflowError, which the broker catches (Throwable) and
// treats as an expression that does not compile. A Go stack overflow is
// fatal to the process, so Compile refuses first, with an *Error for which
// errors.Is(err, ErrLimit) holds and whose message names the limit and
// quotes only the expression's first 64 bytes:
//
//   - MaxExpressionLength (64 KiB): the whole text, whatever follows the
//     expression included. An IN list of a thousand 40-byte ids fits.
//   - MaxExpressionDepth (256): parentheses and unary + - NOT count while
//     parsing, and the compiled tree may be no higher (a unary operator, a
//     comparison, each chained = or <>, and an AND or OR over nested
//     operands each add a level). A chain "a OR b OR c ..." is one node over
//     all its operands, however long, so only nesting counts.
//
// Compiling is linear in the length: the lexer remembers where the search for
// the line end of a "--" comment ran off the end of the text (a "--" without
// one is two minus signs), so a chain of minus signs no longer searches the
// rest of the text once per sign. TestMinusChainLinear counts the bytes
// examined; FuzzCompile and FuzzCompileRepeated (deep and long inputs) run
// under make fuzz.
//
// Differences from Java: the limits above; a property value with invalid UTF-8 is compared as
// bytes (Java would have decoded it to U+FFFD); Java's parse cache (100
// entries) is left to the caller.
package filter
