package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/remoting"
)

// Errors of Run besides ErrOptions.
var (
	ErrNoQueues = errors.New("bench: the topic has no usable queue")
)

// routeWait bounds how long Run waits for an auto-created topic's route.
const routeWait = 15 * time.Second

// Run executes one benchmark and returns its summary. It fails only when
// the run cannot start (bad options, no route); request failures during the
// run are counted in the summary.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	o := &opts
	if err := o.normalize(); err != nil {
		return nil, err
	}
	adm := admin.New(admin.Options{NamesrvAddr: o.NamesrvAddr, SerializeType: o.SerializeType, Logger: o.Logger, Now: o.Now})
	defer adm.Close()
	rd, err := ensureRoute(ctx, adm, o)
	if err != nil {
		return nil, err
	}
	st := newStats()
	runID := newRunID()

	rep := &reporter{o: o, st: st, start: time.Now()}
	repCtx, stopRep := context.WithCancel(ctx)
	repDone := make(chan struct{})
	go func() { defer close(repDone); rep.run(repCtx) }()
	defer func() { stopRep(); <-repDone }()

	switch o.Mode {
	case ModeProduce:
		queues := admin.PublishQueues(o.Topic, rd)
		if len(queues) == 0 {
			return nil, fmt.Errorf("%w: %s has no writable queue", ErrNoQueues, o.Topic)
		}
		p := newProducer(o, st, queues, runID)
		defer p.close()
		start := time.Now()
		pctx, pcancel := phaseContext(ctx, o.Duration)
		defer pcancel()
		p.run(pctx)
		return st.summary(o, time.Since(start)), nil

	case ModeConsume:
		c, err := startConsumer(ctx, adm, o, st, rd, runID)
		if err != nil {
			return nil, err
		}
		defer c.close()
		start := time.Now()
		cctx, cancel := phaseContext(ctx, o.Duration)
		defer cancel()
		done := make(chan struct{})
		go func() { defer close(done); c.run(cctx) }()
		if o.Count > 0 {
			waitFor(cctx, func() bool { return st.recv.count.Load() >= o.Count })
			cancel()
		}
		<-cctx.Done()
		<-done
		return st.summary(o, time.Since(start)), nil

	default: // ModeTimer
		queues := admin.PublishQueues(o.Topic, rd)
		if len(queues) == 0 {
			return nil, fmt.Errorf("%w: %s has no writable queue", ErrNoQueues, o.Topic)
		}
		c, err := startConsumer(ctx, adm, o, st, rd, runID)
		if err != nil {
			return nil, err
		}
		defer c.close()
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan struct{})
		go func() { defer close(done); c.run(cctx) }()
		p := newProducer(o, st, queues, runID)
		defer p.close()
		start := time.Now()
		pctx, pcancel := phaseContext(ctx, o.Duration)
		defer pcancel()
		p.run(pctx)
		grace := o.Grace
		if grace <= 0 {
			grace = o.maxDelay() + 30*time.Second
		}
		gctx, gcancel := context.WithTimeout(ctx, grace)
		waitFor(gctx, func() bool { return st.runRecv.Load() >= st.sent.count.Load() })
		gcancel()
		cancel()
		<-done
		return st.summary(o, time.Since(start)), nil
	}
}

// phaseContext ends with ctx, or after d when d > 0.
func phaseContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// waitFor polls cond every 20 ms until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ensureRoute returns the topic's route. For the sending modes a topic the
// name server does not know is created the way producers create it: one
// message sent with TBW102's route makes the broker auto-create it; Run
// then waits for the new route.
func ensureRoute(ctx context.Context, adm *admin.Admin, o *Options) (*remoting.TopicRouteData, error) {
	rd, err := adm.Route(ctx, o.Topic)
	if err == nil || admin.CodeOf(err) != remoting.TopicNotExist || o.Mode == ModeConsume {
		return rd, err
	}
	if _, err := adm.SendMessage(ctx, admin.SendMessageSpec{Topic: o.Topic, Body: []byte("bench warm-up"), QueueID: -1}); err != nil {
		return nil, fmt.Errorf("bench: create topic %s by sending to it: %w", o.Topic, err)
	}
	wctx, cancel := context.WithTimeout(ctx, routeWait)
	defer cancel()
	waitFor(wctx, func() bool {
		rd, err = adm.Route(wctx, o.Topic)
		return err == nil
	})
	if err != nil {
		return nil, fmt.Errorf("bench: topic %s was sent to but has no route yet: %w", o.Topic, err)
	}
	return rd, nil
}

// startConsumer finds the start offset of every readable queue and returns
// a consumer positioned there.
func startConsumer(ctx context.Context, adm *admin.Admin, o *Options, st *stats, rd *remoting.TopicRouteData, runID string) (*consumer, error) {
	queues := admin.SubscribeQueues(o.Topic, rd)
	if len(queues) == 0 {
		return nil, fmt.Errorf("%w: %s has no readable queue", ErrNoQueues, o.Topic)
	}
	start := make([]int64, len(queues))
	for i, q := range queues {
		var err error
		if o.From == "min" && o.Mode == ModeConsume {
			start[i], err = adm.MinOffset(ctx, q)
		} else {
			start[i], err = adm.MaxOffset(ctx, q)
		}
		if err != nil {
			return nil, err
		}
	}
	return newConsumer(o, st, queues, start, runID), nil
}

func newRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
