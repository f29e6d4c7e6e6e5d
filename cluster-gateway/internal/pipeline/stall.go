package pipeline

import "time"

// minClientStall is the least time a client must hold an answer back before its latencies are
// not learned (a write to a healthy connection takes microseconds; a busy machine may add a few
// milliseconds of scheduling).
const minClientStall = 10 * time.Millisecond

// ClientWrite records that writing (and flushing) part of the answer to the client took d. While
// the gateway waits on a client that does not read, it does not read the pod's answer either, so
// the tokens it meters arrive late: a slow client would make the pod's time to first token and
// inter-token latency look longer than the pod's, and, learned, make the pod look slow to every
// request and to the autoscaling signal. Call it from the goroutine that feeds Observe.
func (a *Attempt) ClientWrite(d time.Duration) { a.clientWait += d }

// clientStalled reports whether the client held the answer back up to now: the gateway waited on
// it for more than a tenth of the attempt so far, and at least minClientStall. A stalled attempt's
// latencies are the client's pace, not the pod's (framework.ResponseInfo.ClientStalled); below
// the bound a client can stretch what is measured by at most about a tenth.
func (a *Attempt) clientStalled(now time.Time) bool {
	return a.clientWait > max(minClientStall, now.Sub(a.sentAt)/10)
}
