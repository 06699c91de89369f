package rmqtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
)

// Run starts a server as Start does, for a whole test binary (TestMain):
// nothing is tied to a test. Its store lies in a temp directory of its own,
// which Close removes, and the logs of the name server and broker are
// discarded unless RMQ_TEST_LOG is set (then every level goes to stderr).
// Close it after m.Run.
//
// CreateTopic, WaitProducer, FastForward and Settle fail a test when they
// fail; a server from Run has none, so they panic there (a clear message,
// which ends the test binary). In a test, call them on srv.T(t), the same
// server bound to t.
func Run(opts ...Option) (*Server, error) {
	dir, err := os.MkdirTemp("", "rmqtest-")
	if err != nil {
		return nil, fmt.Errorf("rmqtest: %w", err)
	}
	s, err := start(opts, runLogger(), dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("rmqtest: %w", err)
	}
	s.ownDir = dir
	return &Server{server: s, t: unbound{}}, nil
}

// runLogger is the logger of a server from Run: none, or with RMQ_TEST_LOG
// set every level to stderr.
func runLogger() zerolog.Logger {
	if os.Getenv("RMQ_TEST_LOG") == "" {
		return zerolog.Nop()
	}
	return zerolog.New(os.Stderr).Level(zerolog.DebugLevel).With().Timestamp().Logger()
}

// T returns the server bound to t: the same name server and broker, the
// same virtual clock and the same FastForward turn (one FastForward at a
// time across all views), but its CreateTopic, WaitProducer, FastForward
// and Settle fail t. Use it on a server from Run shared by the tests of a
// binary; parallel tests each take their own view. Closing or restarting a
// view closes or restarts the one server. The server's logs stay where Run
// or Start sent them.
func (s *Server) T(t testing.TB) *Server { return &Server{server: s.server, t: t} }

// unbound is the failer of a server from Run with no test bound: a failure
// panics, naming the way to bind a test.
type unbound struct{}

func (unbound) Helper() {}

func (unbound) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func (unbound) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...) + " (a server from rmqtest.Run has no test to fail: call the method on srv.T(t) in a test)")
}

// Close stops the gRPC endpoint, the broker and the name server, in that
// order, and removes the store of a server from Run (Start's store goes
// with t.TempDir()). It reports the broker's shutdown errors; calling it
// again returns the same. After Close the server's other methods must not
// be called.
func (s *Server) Close() error { return s.server.Close() }

func (s *server) Close() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return s.closeEr
	}
	s.closed = true
	errs := []error{s.stopBroker()}
	s.ns.Shutdown()
	if s.ownDir != "" {
		errs = append(errs, os.RemoveAll(s.ownDir))
	}
	s.closeEr = errors.Join(errs...)
	return s.closeEr
}

// stopBroker stops the gRPC endpoint, then shuts the broker down cleanly.
func (s *server) stopBroker() error {
	if s.gs != nil {
		s.gs.Stop()
	}
	if err := s.b.Shutdown(); err != nil {
		return fmt.Errorf("broker shutdown: %w", err)
	}
	return nil
}

// Restart stops the broker cleanly (as SIGTERM would: unregistered, every
// acknowledged message flushed, consumer offsets, topics and groups
// persisted, the store checkpointed) and starts a new one on the same store
// and the same ports, the VIP and gRPC ports included. The name server
// stays up; the broker registers again before Restart returns. Clients see
// their connections close and reconnect as to a restarted broker; the
// virtual clock goes on where it was. Restart must not run at the same
// time as the server's other methods (including a FastForward of another
// view). If the new broker cannot start (a port taken meanwhile), Restart
// returns the error and the server is unusable but for Close.
func (s *Server) Restart() error { return s.restart(false) }

// RestartCrash restarts the broker on the crash-recovery path a kill -9
// leads to: the store's abort marker is left behind and the checkpoint is
// the one on disk at the crash, so the new broker's store verifies (CRC,
// framing) and re-dispatches every commitlog record after that checkpoint,
// as on a stock broker after a crash. Ports, name server and clock are as
// with Restart.
//
// What it emulates: a process killed with its page cache intact. All the
// broker wrote to its files, acknowledged or not, survives, as after kill
// -9 of a process (the kernel still has the pages), unlike after a power
// loss or a kernel crash, which lose what was not fsynced; neither is
// emulated. What it does not emulate: the old broker is stopped cleanly
// before the crash state is put back, so what a clean shutdown persists
// and a kill would not is persisted here: consumer offsets committed since
// the last periodic persist (every 5 s; after a kill those messages are
// consumed again), consumer filters, the delay and timer services'
// progress, and consume-queue units not yet dispatched (recovery would
// dispatch them anyway). Requests in flight when it is called are answered
// or refused as at a clean shutdown, not cut off.
func (s *Server) RestartCrash() error { return s.restart(true) }

// The store's files a crash restart puts back (store/doc.go has the layout).
const (
	abortFile      = "abort"      // present while a store is open
	checkpointFile = "checkpoint" // durable commitlog and dispatch positions
)

func (s *Server) restart(crash bool) error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return errors.New("rmqtest: restart of a closed server")
	}
	s.ffMu.Lock() // no FastForward reads s.b while it changes
	defer s.ffMu.Unlock()
	dir := s.bo.StorePathRootDir
	var ckpt []byte
	if crash {
		// The checkpoint as a kill would find it: what the flusher last
		// wrote, before the shutdown's own.
		var err error
		if ckpt, err = os.ReadFile(filepath.Join(dir, checkpointFile)); err != nil {
			return fmt.Errorf("rmqtest: crash restart: %w", err)
		}
	}
	if err := s.stopBroker(); err != nil {
		return fmt.Errorf("rmqtest: restart: %w", err)
	}
	if crash {
		if err := os.WriteFile(filepath.Join(dir, checkpointFile), ckpt, 0o644); err != nil {
			return fmt.Errorf("rmqtest: crash restart: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, abortFile), nil, 0o644); err != nil {
			return fmt.Errorf("rmqtest: crash restart: %w", err)
		}
	}
	if err := s.startBroker(); err != nil {
		return fmt.Errorf("rmqtest: restart: %w", err)
	}
	if crash {
		if clean := s.b.Store().RuntimeInfo()["recoveryCleanShutdown"]; clean != "false" {
			return fmt.Errorf("rmqtest: crash restart: the store recovered as after a clean shutdown (recoveryCleanShutdown=%s)", clean)
		}
	}
	return nil
}
