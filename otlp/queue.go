package otlp

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Batches: at most this many records, or bytes of them, per export. The
// bytes bound the encoding of one request beside the queue.
const (
	batchRecords = 512
	batchBytes   = 1 << 20
	retryMax     = 30 * time.Second
	warnEvery    = time.Minute
)

// queue is the log SDK's processor of the sink: the records the logger
// emits wait in it, bounded in bytes, for its one sender goroutine. The
// SDK's own BatchProcessor bounds its queue in records, not bytes, and
// drops without telling how many: neither bounds memory nor counts.
type queue struct {
	exp   sdklog.Exporter
	limit int // bytes
	delay time.Duration
	retry struct{ first, giveUp time.Duration }
	warn  func(string)

	mu     sync.Mutex
	recs   []sdklog.Record
	sizes  []int
	bytes  int // queued and being sent
	closed bool

	wake    chan struct{}
	stop    chan struct{} // closed by Shutdown: send what is queued, then end
	done    chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	dropped atomic.Uint64
	sent    atomic.Uint64
	lastErr time.Time
	failing bool
}

func newQueue(exp sdklog.Exporter, limit int, delay, retryFirst, giveUp time.Duration, warn func(string)) *queue {
	q := &queue{exp: exp, limit: limit, delay: delay, warn: warn,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	q.retry.first, q.retry.giveUp = retryFirst, giveUp
	q.ctx, q.cancel = context.WithCancel(context.Background())
	go q.run()
	return q
}

// recordBase is what a record costs before its strings: the record
// itself (its inline attributes included) and its slot's size.
var recordBase = int(unsafe.Sizeof(sdklog.Record{})) + int(unsafe.Sizeof(0))

// recordSize is what r holds in memory, about: its strings and the
// attributes past the inline ones.
func recordSize(r *sdklog.Record) int {
	n := recordBase + len(r.Body().AsString()) + len(r.EventName()) + len(r.SeverityText())
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		n += int(unsafe.Sizeof(kv)) + len(kv.Key) + len(kv.Value.AsString())
		return true
	})
	return n
}

func (q *queue) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }

// OnEmit queues a copy of r, or counts it dropped when the queue is full
// or closed. It never waits.
func (q *queue) OnEmit(_ context.Context, r *sdklog.Record) error {
	n := recordSize(r)
	q.mu.Lock()
	if q.closed || q.bytes+n > q.limit {
		q.mu.Unlock()
		q.dropped.Add(1)
		return nil
	}
	q.recs = append(q.recs, r.Clone())
	q.sizes = append(q.sizes, n)
	q.bytes += n
	full := len(q.recs) >= batchRecords
	q.mu.Unlock()
	if full {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// take moves the next batch out of the queue; its bytes stay counted
// until release.
func (q *queue) take() ([]sdklog.Record, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k, b := 0, 0
	for k < len(q.recs) && k < batchRecords && (k == 0 || b+q.sizes[k] <= batchBytes) {
		b += q.sizes[k]
		k++
	}
	if k == 0 {
		return nil, 0
	}
	batch := make([]sdklog.Record, k)
	copy(batch, q.recs)
	// Shifted down rather than resliced, so that the array's front is
	// not kept alive with the records sent.
	n := copy(q.recs, q.recs[k:])
	clear(q.recs[n:])
	q.recs = q.recs[:n]
	q.sizes = q.sizes[:copy(q.sizes, q.sizes[k:])]
	if len(q.recs) == 0 && cap(q.recs) > batchRecords {
		// An idle queue gives back what a burst grew it to.
		q.recs, q.sizes = nil, nil
	}
	return batch, b
}

func (q *queue) release(b int) {
	q.mu.Lock()
	q.bytes -= b
	q.mu.Unlock()
}

// run sends batches: when one is full, every delay, and at Shutdown until
// the queue is empty or Shutdown's deadline cancels it.
func (q *queue) run() {
	defer close(q.done)
	t := time.NewTicker(q.delay)
	defer t.Stop()
	stopping := false
	for {
		if !stopping {
			select {
			case <-q.wake:
			case <-t.C:
			case <-q.stop:
				stopping = true
			}
		}
		for {
			batch, b := q.take()
			if batch == nil {
				break
			}
			q.send(batch)
			q.release(b)
			if !stopping {
				select {
				case <-q.stop:
					stopping = true
				default:
				}
			}
			if !stopping && len(batch) < batchRecords {
				break
			}
		}
		if stopping {
			q.mu.Lock()
			empty := len(q.recs) == 0
			q.mu.Unlock()
			if empty {
				return
			}
		}
	}
}

// send exports batch, retrying with exponential backoff until it is
// delivered, RetryFor has passed, or the queue is cancelled (Shutdown's
// deadline): a batch given up is counted dropped.
func (q *queue) send(batch []sdklog.Record) {
	start, wait := time.Now(), q.retry.first
	for {
		err := q.exp.Export(q.ctx, batch)
		if n, ok := partial(err); ok {
			// The collector took the batch and rejected n of its
			// records: sent again, the rest would arrive twice and
			// the n be rejected again. Those n are dropped, counted.
			n = min(n, uint64(len(batch)))
			q.sent.Add(uint64(len(batch)) - n)
			q.dropped.Add(n)
			q.failing = false
			if n > 0 {
				q.say(fmt.Sprintf("once: OTLP: the collector took %d records and rejected %d, counted in otlp_dropped (not sent again): %v", uint64(len(batch))-n, n, err))
			}
			return
		}
		if err == nil {
			q.sent.Add(uint64(len(batch)))
			if q.failing {
				q.failing = false
				q.say("once: OTLP: exporting logs again")
			}
			return
		}
		if permanent(err) {
			q.dropped.Add(uint64(len(batch)))
			q.failing = true
			q.say(fmt.Sprintf("once: OTLP: the collector refused %d records, counted in otlp_dropped (not sent again): %v", len(batch), err))
			return
		}
		q.failed(err)
		if q.ctx.Err() != nil || time.Since(start)+wait > q.retry.giveUp {
			q.dropped.Add(uint64(len(batch)))
			return
		}
		select {
		case <-time.After(wait):
		case <-q.ctx.Done():
		}
		wait = min(2*wait, retryMax)
	}
}

// failed tells Warn of err, once a minute at most.
func (q *queue) failed(err error) {
	q.failing = true
	if now := time.Now(); now.Sub(q.lastErr) >= warnEvery {
		q.lastErr = now
		q.say(fmt.Sprintf("once: OTLP: exporting logs failed, retrying (what the queue can't hold is counted in otlp_dropped): %v", err))
	}
}

func (q *queue) say(s string) {
	if q.warn != nil {
		q.warn(s)
	}
}

// ForceFlush is not used: the sink's Close is Shutdown.
func (q *queue) ForceFlush(context.Context) error { return nil }

// Shutdown sends what is queued until ctx ends, counts what is left
// dropped, and shuts the exporter down.
func (q *queue) Shutdown(ctx context.Context) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	q.mu.Unlock()
	close(q.stop)
	select {
	case <-q.done:
	case <-ctx.Done():
		q.cancel()
		<-q.done
	}
	q.cancel()
	q.mu.Lock()
	q.dropped.Add(uint64(len(q.recs)))
	q.recs, q.sizes, q.bytes = nil, nil, 0
	q.mu.Unlock()
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return q.exp.Shutdown(sctx)
}

// partialSuccess is the OTLP exporters' error for a partial success: the
// collector answered OK but rejected some of the records
// ("OTLP partial success: MESSAGE (N logs rejected)").
var partialSuccess = regexp.MustCompile(`(?s)^OTLP partial success: .* \(([0-9]+) logs rejected\)$`)

// partial says whether err is the collector's partial success (every
// error it joins one), and how many records it rejected.
func partial(err error) (uint64, bool) {
	if err == nil {
		return 0, false
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var n uint64
		errs := j.Unwrap()
		for _, e := range errs {
			k, ok := partial(e)
			if !ok {
				return 0, false
			}
			n += k
		}
		return n, len(errs) > 0
	}
	m := partialSuccess.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	return n, err == nil
}

// httpRefused is the OTLP/HTTP exporter's error for an answer it does
// not retry: "failed to send logs to URL: 401 Unauthorized (body: ...)".
var httpRefused = regexp.MustCompile(`^failed to send logs to \S+: ([0-9]{3}) `)

// permanent says whether err is the collector refusing the batch itself,
// which sending it again would only have refused again: OTLP/HTTP's 4xx
// answers but 429, and gRPC's codes that the OTLP specification does not
// list as retryable. Such a batch is dropped (counted) at once, not
// retried for RetryFor while every batch after it waits.
func permanent(err error) bool {
	if m := httpRefused.FindStringSubmatch(err.Error()); m != nil {
		code, _ := strconv.Atoi(m[1])
		return code >= 400 && code < 500 && code != 429
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
			codes.Unauthenticated, codes.FailedPrecondition, codes.Unimplemented:
			return true
		}
	}
	return false
}
