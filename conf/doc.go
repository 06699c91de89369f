// Package conf loads Java-style configuration files (the broker.conf and
// namesrv.properties files that RocketMQ's startup scripts pass with -c) into
// Go structs, and prints structs back in the same format (the -p and -m flags).
//
// # File format
//
// The accepted syntax is the one java.util.Properties.load reads, which is
// what BrokerStartup and NamesrvStartup use:
//
//	+--------------------------------------------------------------+
//	| # comment            (first non-blank char is '#' or '!')    |
//	|                      (blank lines are skipped)               |
//	| brokerName=broker-a                                          |
//	| brokerId = 0         (blanks around the separator dropped)   |
//	| flushDiskType: ASYNC_FLUSH     (':' works like '=')          |
//	| brokerIP1 127.0.0.1  (so does the first run of blanks)       |
//	| storePathRootDir=/data/\                                     |
//	|     store            (odd trailing '\' continues the line;   |
//	|                       leading blanks of the next are dropped)|
//	| a\=b=c\tx\u0041      (escapes: \t \n \r \f \uXXXX, \<any>)   |
//	+--------------------------------------------------------------+
//	  key   := chars up to the first unescaped '=', ':' or blank
//	  value := rest of the logical line, escapes resolved,
//	           surrounding blanks trimmed
//
// Two deliberate differences from Java: the file is read as UTF-8 rather than
// ISO-8859-1, and trailing blanks of a value are trimmed (Java keeps them and
// then fails on "brokerId=0 " when it parses the number).
//
// # Binding
//
// A key is bound to every exported field tagged `conf:"javaKeyName"` in each
// destination struct (anonymous embedded structs are searched too); `conf:"-"`
// and untagged fields are skipped. Field kinds and their parsing:
//
//	string             the value as is
//	bool               Java Boolean.parseBoolean: "true" in any case, else false
//	int*, uint*        base-10, range-checked for the field's size
//	float32, float64   strconv.ParseFloat
//	time.Duration      an integer count of the tag's unit (`conf:"k,ms"`;
//	                   units ns us ms s m h, default ms) or a Go duration "1m30s"
//
// A bad value is an error naming file:line and the key. A key no destination
// knows is a warning "file:line: unknown key \"x\"", as is a key repeated in the
// same file (the last value wins, as in Java).
package conf
