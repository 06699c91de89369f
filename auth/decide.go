package auth

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Request is one authorization context (DefaultAuthorizationContext): what
// a request does to one resource, from which address.
type Request struct {
	Resource Resource
	Actions  []string
	SourceIP string
}

// Denied is an authentication or authorization failure: the stock answers
// it with NO_PERMISSION (remoting) or UNAUTHORIZED (gRPC) and this message.
type Denied struct{ Msg string }

func (d *Denied) Error() string { return d.Msg }

func denyf(format string, a ...any) *Denied { return &Denied{Msg: fmt.Sprintf(format, a...)} }

// matches is PolicyEntry.isMatchResource, isMatchAction and
// isMatchEnvironment together.
func (e *Entry) matches(r Request) bool {
	if !e.Resource.Match(r.Resource) || len(e.Actions) == 0 {
		return false
	}
	// Any of the requested actions in the entry (or the entry's All) is
	// enough; a request for Any matches every entry.
	act := slices.Contains(r.Actions, ActAny)
	for _, a := range r.Actions {
		if act {
			break
		}
		act = slices.Contains(e.Actions, a) || slices.Contains(e.Actions, ActAll)
	}
	if !act {
		return false
	}
	if len(e.SourceIPs) == 0 {
		return true
	}
	if r.SourceIP == "" {
		return false
	}
	for _, ip := range e.SourceIPs {
		if ipInRange(r.SourceIP, ip) {
			return true
		}
	}
	return false
}

// ipInRange is IPAddressUtils.isIPInRange: ip equals the entry's address,
// or lies in its CIDR block.
func ipInRange(ip, rng string) bool {
	a, err := netip.ParseAddr(strings.Trim(ip, "[]"))
	if err != nil {
		return false
	}
	a = a.Unmap()
	if p, err := netip.ParsePrefix(rng); err == nil {
		return p.Masked().Contains(a)
	}
	b, err := netip.ParseAddr(rng)
	return err == nil && b.Unmap() == a
}

// validIPOrCIDR is IPAddressUtils.isValidIPOrCidr.
func validIPOrCIDR(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	_, err := netip.ParsePrefix(s)
	return err == nil
}

// compareEntries is AclAuthorizationHandler.comparePolicyEntries,
// reproduced with its quirks: an Any-type entry sorts after typed ones;
// of two prefixes the shorter sorts first; a literal against a prefix is
// -1 whichever side it is on (the Java tests r1 twice), so their order is
// the sort's; an any-pattern entry ties with the others; and among ties a
// Deny sorts after an Allow (contrary to the Java comment), so the Allow
// decides.
func compareEntries(e1, e2 *Entry) int {
	r1, r2 := e1.Resource, e2.Resource
	c := 0
	switch {
	case r1.Type != r2.Type:
		if r1.Type == TypeAny {
			c = 1
		}
		if r2.Type == TypeAny {
			c = -1
		}
	case r1.Pattern == r2.Pattern:
		if r1.Pattern == PatternPrefixed {
			c = cmpInt(javaLen(r1.Name), javaLen(r2.Name))
		}
	default:
		if r1.Pattern == PatternLiteral || r1.Pattern == PatternPrefixed {
			c = -1
		}
	}
	if c != 0 {
		return c
	}
	switch {
	case e1.Decision == Deny:
		return 1
	case e2.Decision == Deny:
		return -1
	}
	return 0
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// javaLen is String.length: the string's UTF-16 units.
func javaLen(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// javaSort orders es as java.util.List.sort does for fewer than 32
// elements (TimSort: the leading run, reversed when strictly descending,
// then binary insertion), which matters because compareEntries is not a
// consistent order. Lists of 32 or more matched entries, which TimSort
// merges, are sorted the same way here.
func javaSort(es []*Entry) {
	n := len(es)
	if n < 2 {
		return
	}
	run := 1
	if compareEntries(es[1], es[0]) < 0 {
		run = 2
		for run < n && compareEntries(es[run], es[run-1]) < 0 {
			run++
		}
		slices.Reverse(es[:run])
	} else {
		run = 2
		for run < n && compareEntries(es[run], es[run-1]) >= 0 {
			run++
		}
	}
	for start := run; start < n; start++ {
		pivot := es[start]
		lo, hi := 0, start
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if compareEntries(pivot, es[mid]) < 0 {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		copy(es[lo+1:start+1], es[lo:start])
		es[lo] = pivot
	}
}

// decide is AclAuthorizationHandler.handle for acl (nil: none): the
// matching Custom entries, else the matching Default ones, sorted; the
// first decides.
func decide(subject string, acl *Acl, r Request) error {
	fail := func(detail string) error {
		return denyf("%s has no permission to access %s from %s, %s", subject, r.Resource.Key(), r.SourceIP, detail)
	}
	if acl == nil {
		return fail("no matched policies.")
	}
	var matched []*Entry
	for _, typ := range []string{PolicyCustom, PolicyDefault} {
		if p := acl.policy(typ); p != nil {
			for i := range p.Entries {
				if p.Entries[i].matches(r) {
					matched = append(matched, &p.Entries[i])
				}
			}
		}
		if len(matched) > 0 {
			break
		}
	}
	if len(matched) == 0 {
		return fail("no matched policies.")
	}
	javaSort(matched)
	if matched[0].Decision == Deny {
		return fail("the decision is deny.")
	}
	return nil
}
