package specs

import (
	"fmt"
	"math/big"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// MaxDuration is the longest duration a spec may give: a gate's timeout, a
// fan-out's task_timeout, a budget's ms. Every such duration becomes an
// absolute deadline (now plus the duration, in nanoseconds); 365 days keeps
// that far from the point where the sum overflows (about 292 years) and
// still covers any real wait. Longer values are refused at validation
// (CodeDurationTooLong), so `stratum validate`, stratum_validate and
// stratum_plan refuse them alike.
const MaxDuration = 365 * 24 * time.Hour

// After is the deadline n units after now (a gate's timeout in seconds, a
// budget's ms in milliseconds), never before now and never more than
// MaxDuration after it: n is clamped to [0, MaxDuration/unit] before it
// is multiplied, so no value — one that validation would refuse, or one
// read from a record written by an older stratum — can overflow into a
// deadline in the past (a gate timeout of 9300000000 seconds was stored as
// the year 1737 and swept as a timeout at once).
func After(now time.Time, n int64, unit time.Duration) time.Time {
	n = max(0, min(n, int64(MaxDuration/unit)))
	return now.Add(time.Duration(n) * unit)
}

// DurationLimit describes MaxDuration in unit for a message: "31536000
// seconds (365 days)".
func DurationLimit(unit time.Duration) string {
	return fmt.Sprintf("%d %s (365 days)", int64(MaxDuration/unit), unitName(unit))
}

func unitName(unit time.Duration) string {
	if unit == time.Millisecond {
		return "milliseconds"
	}
	return "seconds"
}

// duration returns a duration field counted in unit (time.Second for
// timeout and task_timeout, time.Millisecond for a budget's ms): an
// integer ≥ 1 and at most MaxDuration. A longer one — an integer that does
// not even fit 64 bits included — is a duration-too-long problem whose
// suggestion reads the value as if given in the next smaller unit (a
// timeout in milliseconds, an ms budget in microseconds), when that fits.
func (c *checker) duration(m *mapping, k, path string, unit time.Duration) (int64, bool) {
	limit := int64(MaxDuration / unit)
	if n := resolve(m.valNode(k)); m.has(k) && n != nil && n.Kind == yaml.ScalarNode {
		if v := bigNumber(n); v != nil && v.Cmp(big.NewInt(limit)) > 0 {
			c.durationTooLong(m, k, path, v, unit, limit)
			return 0, false
		}
	}
	return c.integer(m, k, path, 1)
}

// bigNumber is a YAML number of any size (an integer too large for 64 bits
// resolves as a float), truncated to an integer; nil for anything else.
func bigNumber(n *yaml.Node) *big.Int {
	switch n.Tag {
	case "!!int":
		v, _ := new(big.Int).SetString(strings.ReplaceAll(n.Value, "_", ""), 0)
		return v
	case "!!float":
		f, _, err := big.ParseFloat(n.Value, 10, 256, big.ToZero)
		if err != nil || f.IsInf() {
			return nil
		}
		v, _ := f.Int(nil)
		return v
	}
	return nil
}

func (c *checker) durationTooLong(m *mapping, k, path string, v *big.Int, unit time.Duration, limit int64) {
	m.bad[k] = true
	msg := fmt.Sprintf("%s %s is longer than %s, the longest duration a spec may give",
		k, v.String(), DurationLimit(unit))
	sugg := fmt.Sprintf("Use at most %d: %s is in %s.", limit, k, unitName(unit))
	if smaller := new(big.Int).Quo(v, big.NewInt(1000)); smaller.Sign() > 0 && smaller.Cmp(big.NewInt(limit)) <= 0 {
		from := "milliseconds"
		if unit == time.Millisecond {
			from = "microseconds"
		}
		sugg = fmt.Sprintf("did you mean %s? %s reads like %s; %s is in %s, at most %d.",
			smaller.String(), v.String(), from, k, unitName(unit), limit)
	}
	c.add(CodeDurationTooLong, m.valNode(k), joinPath(path, k), msg, sugg)
}
