package config

import (
	"fmt"
	"strconv"
	"time"

	"github.com/stratum-go/stratum/specs"
)

// ParseTimeout reads a timeout as configuration gives it (llm_timeout,
// store_timeout, STRATUM_LLM_TIMEOUT, STRATUM_STORE_TIMEOUT): a Go duration
// such as 90s or 10m, or a whole number of seconds. It must be positive and
// at most specs.MaxDuration (365 days), the longest duration stratum
// accepts anywhere; a number of seconds is checked before it is multiplied,
// so no value overflows into a negative or tiny duration.
func ParseTimeout(text string) (time.Duration, error) {
	if secs, err := strconv.ParseInt(text, 10, 64); err == nil {
		if secs <= 0 || secs > int64(specs.MaxDuration/time.Second) {
			return 0, fmt.Errorf("%s (got %s seconds)", timeoutRange, text)
		}
		return time.Duration(secs) * time.Second, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil || d <= 0 || d > specs.MaxDuration {
		return 0, fmt.Errorf("%s (got %q)", timeoutRange, text)
	}
	return d, nil
}

const timeoutRange = "want a positive duration of at most 365 days, such as 90s or 10m, or a number of seconds"
