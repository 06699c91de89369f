// Package javastr holds the java.lang.String rules that rmq must follow to
// the letter where it reads text a Java tool or broker would read: a leaf
// every package may import.
package javastr

// Trim is String.trim: it drops every leading and trailing byte <= ' ' (the
// ASCII controls and the space). Unlike strings.TrimSpace it keeps Unicode
// spaces and drops the other controls, as Java does.
func Trim(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	return s[i:j]
}
