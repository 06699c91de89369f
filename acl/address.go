package acl

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// An addressMatcher is one whiteRemoteAddress or globalWhiteRemoteAddresses
// pattern (RemoteAddressStrategyFactory); it is given the client's IP
// without the port, written as Java writes it.
type addressMatcher interface {
	match(ip string) bool
}

type (
	matchNone struct{}               // a blank pattern
	matchAll  struct{}               // "*", "*.*.*.*", "*:*:*:*:*:*:*:*"
	matchOne  struct{ addr string }  // one address (IPv6 expanded)
	matchSet  struct{ set []string } // "a,b,c" and "192.168.1.{1,2,3}"
	matchV4   struct {               // "192.168.0.*", "192.168.1.1-100", "10.*.*.*"
		head       string // the leading parts, each with its dot
		index      int    // which part (1..3) holds the range
		start, end int
	}
	matchV6 struct { // IPv6 with '*' or a range in one group
		head       string
		index      int
		start, end int
	}
)

func (matchNone) match(string) bool { return false }
func (matchAll) match(string) bool  { return true }

func (m matchOne) match(ip string) bool { return expandIP(ip, 8) == m.addr }

func (m matchSet) match(ip string) bool {
	if validIPv6(ip) {
		ip = expandIP(ip, 8)
	}
	for _, a := range m.set {
		if a == ip {
			return true
		}
	}
	return false
}

func (m matchV4) match(ip string) bool {
	if validIPv4(ip) {
		if !strings.HasPrefix(ip, m.head) {
			return false
		}
		rest := ip[len(m.head):]
		// The part at index: the rest up to its dot (none for the last part).
		if m.index < 3 {
			rest = rest[:strings.IndexByte(rest, '.')]
		}
		v, err := strconv.Atoi(rest)
		return err == nil && v >= m.start && v <= m.end
	}
	return false // an IPv6 client never matches an IPv4 range
}

func (m matchV6) match(ip string) bool {
	if !validIPv6(ip) {
		return false
	}
	ip = expandIP(ip, 8)
	if !strings.HasPrefix(ip, m.head) || len(ip) < 5*m.index+4 {
		return false
	}
	v, err := strconv.ParseUint(ip[5*m.index:5*m.index+4], 16, 16)
	return err == nil && int(v) >= m.start && int(v) <= m.end
}

// parseAddress turns a pattern into its matcher, refusing what the stock
// factory refuses.
func parseAddress(p string) (addressMatcher, error) {
	if strings.TrimSpace(p) == "" {
		return matchNone{}, nil
	}
	if p == "*" || p == "*.*.*.*" || p == "*:*:*:*:*:*:*:*" {
		return matchAll{}, nil
	}
	if strings.HasSuffix(p, "}") {
		sep := "."
		if strings.Contains(p, ":") {
			sep = ":"
		}
		parts := splitNonEmpty(p, sep)
		if sep == "." && len(parts) < 4 {
			return nil, fmt.Errorf("MultipleRemoteAddressStrategy has got a/some wrong format IP(s) %s", p)
		}
		last := parts[len(parts)-1]
		if !strings.HasPrefix(last, "{") {
			return nil, fmt.Errorf("MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress %s", p)
		}
		prefix := p[:strings.IndexByte(p, '{')]
		var addrs []string
		for _, s := range splitNonEmpty(last[1:len(last)-1], ",") {
			addrs = append(addrs, prefix+s)
		}
		return newMatchSet(addrs)
	}
	if strings.Contains(p, ",") {
		return newMatchSet(splitNonEmpty(p, ","))
	}
	if strings.ContainsAny(p, "*-") {
		if strings.Contains(p, ":") {
			return newMatchV6(p)
		}
		return newMatchV4(p)
	}
	if !validIPv4(p) && !validIPv6(p) {
		return nil, fmt.Errorf("Netaddress examine Exception netaddress is %s", p)
	}
	return matchOne{addr: expandIP(p, 8)}, nil
}

func newMatchSet(addrs []string) (addressMatcher, error) {
	m := matchSet{}
	for _, a := range addrs {
		switch {
		case validIPv4(a):
			m.set = append(m.set, a)
		case validIPv6(a):
			m.set = append(m.set, expandIP(a, 8))
		default:
			return nil, fmt.Errorf("Netaddress examine Exception netaddress is %s", a)
		}
	}
	return m, nil
}

// newMatchV4 is RangeRemoteAddressStrategy for IPv4: the first of parts
// 1..3 that is "*" or "a-b" holds the range; the parts before it are the
// head. (A stock pattern with no range in parts 1..3, e.g. "*.1.1.1", loads
// and then fails every check with a NullPointerException; here it is
// refused at load.)
func newMatchV4(p string) (addressMatcher, error) {
	parts := splitNonEmpty(p, ".")
	m := matchV4{}
	for i := 1; i <= 3 && i < len(parts); i++ {
		v := strings.TrimSpace(parts[i])
		found := false
		switch {
		case v == "*":
			m.start, m.end, found = 0, 255, true
		case strings.Contains(v, "-"):
			if strings.HasPrefix(v, "-") {
				return nil, fmt.Errorf("RangeRemoteAddressStrategy netaddress examine scope Exception value %s ", v)
			}
			se := splitNonEmpty(v, "-")
			if len(se) != 2 {
				return nil, fmt.Errorf("RangeRemoteAddressStrategy netaddress examine scope Exception value %s ", v)
			}
			s, err1 := strconv.Atoi(se[0])
			e, err2 := strconv.Atoi(se[1])
			if err1 != nil || err2 != nil || s < 0 || e > 255 || s > e {
				return nil, fmt.Errorf("RangeRemoteAddressStrategy netaddress examine scope Exception start is %s , end is %s", se[0], se[1])
			}
			m.start, m.end, found = s, e, e > 0
		}
		if !found {
			continue
		}
		m.index = i
		if len(parts) != 4 {
			return nil, fmt.Errorf("Netaddress examine scope Exception netaddress is %s", p)
		}
		for j := 0; j < i; j++ {
			n, err := strconv.Atoi(strings.TrimSpace(parts[j]))
			if err != nil || n < 0 || n > 255 {
				return nil, fmt.Errorf("Netaddress examine scope Exception netaddress is %s", p)
			}
			m.head += strings.TrimSpace(parts[j]) + "."
		}
		return m, nil
	}
	return nil, fmt.Errorf("Netaddress examine scope Exception netaddress is %s", p)
}

// newMatchV6 is RangeRemoteAddressStrategy for IPv6: '*' only at the end,
// a range only in the last group before it.
func newMatchV6(p string) (addressMatcher, error) {
	bad := fmt.Errorf("Netaddress examine scope Exception netaddress is %s", p)
	star, minus := strings.IndexByte(p, '*'), strings.IndexByte(p, '-')
	if star > -1 && star != len(p)-1 {
		return nil, bad
	}
	if minus > -1 {
		last := strings.LastIndexByte(p, ':')
		if star == -1 && minus <= last {
			return nil, bad
		}
		if star > -1 && minus <= strings.LastIndexByte(p[:last], ':') {
			return nil, bad
		}
	}
	parts := splitNonEmpty(p, ":")
	m := matchV6{}
	for i := 1; i < len(parts); i++ {
		v := strings.TrimSpace(parts[i])
		found := false
		switch {
		case v == "*":
			m.start, m.end, found = 0, 0xffff, true
		case strings.Contains(v, "-"):
			se := splitNonEmpty(v, "-")
			if strings.HasPrefix(v, "-") || len(se) != 2 {
				return nil, bad
			}
			s, err1 := strconv.ParseUint(se[0], 16, 32)
			e, err2 := strconv.ParseUint(se[1], 16, 32)
			if err1 != nil || err2 != nil || e > 0xffff || s > e {
				return nil, bad
			}
			m.start, m.end, found = int(s), int(e), e > 0
		}
		if !found {
			continue
		}
		var sub string
		part := 7
		switch {
		case star > -1 && minus > -1:
			part = 6
			last := strings.LastIndexByte(p, ':')
			sub = p[:strings.LastIndexByte(p[:last], ':')]
		default:
			sub = p[:strings.LastIndexByte(p, ':')]
		}
		m.head = expandIP(sub, part)
		m.index = len(splitNonEmpty(m.head, ":"))
		return m, nil
	}
	return nil, bad
}

// expandIP is AclUtils.expandIP: upper case, "::" widened to part groups,
// each group padded to four digits. An IPv4 address comes back unchanged.
func expandIP(addr string, part int) string {
	addr = strings.ToUpper(addr)
	if pad := part - strings.Count(addr, ":"); pad > 0 {
		addr = strings.ReplaceAll(addr, "::", strings.Repeat(":", pad+1))
	}
	groups := strings.Split(addr, ":")
	for i, g := range groups {
		if len(g) < 4 {
			groups[i] = strings.Repeat("0", 4-len(g)) + g
		}
	}
	return strings.Join(groups, ":")
}

// validIPv4 is commons-validator's isValidInet4Address: four decimal
// parts 0..255, no leading zeros.
func validIPv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if len(p) == 0 || len(p) > 3 || (len(p) > 1 && p[0] == '0') {
			return false
		}
		n, err := strconv.Atoi(p)
		if err != nil || n > 255 || p[0] == '+' || p[0] == '-' {
			return false
		}
	}
	return true
}

func validIPv6(s string) bool {
	if !strings.Contains(s, ":") {
		return false
	}
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6() && a.Zone() == ""
}

// splitNonEmpty is commons-lang StringUtils.split with a separator set:
// empty tokens are dropped.
func splitNonEmpty(s, seps string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(seps, r) })
}

// clientIP is the address the patterns see: the remote address without its
// port, IPv4-mapped IPv6 written as IPv4.
func clientIP(remote string) string {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap().WithZone("").String()
	}
	if i := strings.LastIndexByte(remote, ':'); i >= 0 {
		return remote[:i]
	}
	return remote
}
