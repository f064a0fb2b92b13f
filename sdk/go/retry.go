package posthorn

import (
	"math/rand"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RetryPolicy says when a call is tried again and how long to wait, as in every
// Posthorn client library: on 429 the larger of Retry-After and an exponential backoff
// with jitter; on 5xx and connection errors the backoff, and only for calls safe to
// repeat; other 4xx never; and, ahead of time, until the minute's reset once
// X-RateLimit-Remaining falls below RateLimitThreshold.
type RetryPolicy struct {
	// MaxRetries after the first attempt (so at most MaxRetries+1 requests).
	MaxRetries int
	// BackoffBase is the first backoff step; it doubles with each retry up to BackoffCap.
	BackoffBase time.Duration
	BackoffCap  time.Duration
	// MaxWait is the longest single wait accepted: a longer Retry-After is returned as
	// a *RateLimitError instead.
	MaxWait time.Duration
	// RateLimitThreshold: wait for X-RateLimit-Reset once X-RateLimit-Remaining falls
	// below it (1: only when the minute's quota is spent; 0: never wait ahead of time).
	RateLimitThreshold int
}

// DefaultRetryPolicy is the policy of a client made without retry options.
var DefaultRetryPolicy = RetryPolicy{
	MaxRetries:         5,
	BackoffBase:        500 * time.Millisecond,
	BackoffCap:         30 * time.Second,
	MaxWait:            120 * time.Second,
	RateLimitThreshold: 1,
}

// Backoff is the wait before retry number retry (0-based): half the capped exponential
// step fixed, half random ("equal jitter"), so clients spread out but never hammer.
// random returns a number in [0, 1).
func (p RetryPolicy) Backoff(retry int, random func() float64) time.Duration {
	if retry > 32 {
		retry = 32
	}
	step := float64(p.BackoffBase) * float64(uint64(1)<<uint(retry))
	if step > float64(p.BackoffCap) {
		step = float64(p.BackoffCap)
	}
	return time.Duration(step/2 + random()*step/2)
}

// Wait is the wait before retrying after an answer with status (0: no answer): the
// backoff, or for a 429 the larger of it and Retry-After (retryAfter < 0: none sent).
func (p RetryPolicy) Wait(status, retry int, retryAfter time.Duration, random func() float64) time.Duration {
	wait := p.Backoff(retry, random)
	if status == http.StatusTooManyRequests && retryAfter > wait {
		wait = retryAfter
	}
	return wait
}

// ParseRetryAfter reads Retry-After as a wait from now: delta-seconds or an HTTP-date
// (a past one is 0). ok is false when the value is absent or unreadable.
func ParseRetryAfter(value string, now time.Time) (wait time.Duration, ok bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if isDigits(value) {
		seconds, err := strconv.ParseInt(value, 10, 64)
		if err != nil || seconds > 1e9 {
			seconds = 1e9
		}
		return time.Duration(seconds) * time.Second, true
	}
	when, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	if d := when.Sub(now); d > 0 {
		return d, true
	}
	return 0, true
}

// jitter is the random source of backoffs: its own generator, seeded once, so clients
// started together spread out without touching the program's global math/rand state.
func jitter() float64 {
	jitterMu.Lock()
	defer jitterMu.Unlock()
	return jitterRand.Float64()
}

var (
	jitterMu   sync.Mutex
	jitterRand = rand.New(rand.NewSource(time.Now().UnixNano()))
)
