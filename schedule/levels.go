package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultLevels is the stock messageDelayLevel.
const DefaultLevels = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

// ErrBadLevels is returned for a messageDelayLevel string that does not parse.
var ErrBadLevels = errors.New("schedule: bad messageDelayLevel")

// Levels maps delay level n (1-based) to its delay.
type Levels []time.Duration

// ParseLevels parses a messageDelayLevel string: space-separated numbers each
// followed by a unit s, m, h or d. Level n is the n-th entry.
func ParseLevels(s string) (Levels, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, fmt.Errorf("%w: %q is empty", ErrBadLevels, s)
	}
	out := make(Levels, 0, len(fields))
	for i, f := range fields {
		if len(f) < 2 {
			return nil, fmt.Errorf("%w: level %d %q has no unit", ErrBadLevels, i+1, f)
		}
		var unit time.Duration
		switch f[len(f)-1] {
		case 's':
			unit = time.Second
		case 'm':
			unit = time.Minute
		case 'h':
			unit = time.Hour
		case 'd':
			unit = 24 * time.Hour
		default:
			return nil, fmt.Errorf("%w: level %d %q: unit must be s, m, h or d", ErrBadLevels, i+1, f)
		}
		n, err := strconv.ParseInt(f[:len(f)-1], 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: level %d %q: not a non-negative number", ErrBadLevels, i+1, f)
		}
		if n > int64(365*24*time.Hour/unit) {
			return nil, fmt.Errorf("%w: level %d %q: longer than a year", ErrBadLevels, i+1, f)
		}
		out = append(out, time.Duration(n)*unit)
	}
	return out, nil
}

// Max is the highest level.
func (l Levels) Max() int { return len(l) }

// Clamp maps a requested level to a valid one: above the highest becomes the
// highest (stock clamps rather than rejects); 0 or below means "not delayed".
func (l Levels) Clamp(level int) int {
	if level > len(l) {
		return len(l)
	}
	return level
}

// Delay returns the delay of a valid level.
func (l Levels) Delay(level int) time.Duration {
	if level < 1 || level > len(l) {
		return 0
	}
	return l[level-1]
}

// DeliverAt is the deliver timestamp (ms) of a message stored at storeMs on level.
func (l Levels) DeliverAt(level int, storeMs int64) int64 {
	return storeMs + l.Delay(level).Milliseconds()
}

// String formats the levels back into messageDelayLevel form.
func (l Levels) String() string {
	parts := make([]string, len(l))
	for i, d := range l {
		switch {
		case d%(24*time.Hour) == 0 && d > 0:
			parts[i] = strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
		case d%time.Hour == 0 && d > 0:
			parts[i] = strconv.FormatInt(int64(d/time.Hour), 10) + "h"
		case d%time.Minute == 0 && d > 0:
			parts[i] = strconv.FormatInt(int64(d/time.Minute), 10) + "m"
		default:
			parts[i] = strconv.FormatInt(int64(d/time.Second), 10) + "s"
		}
	}
	return strings.Join(parts, " ")
}
