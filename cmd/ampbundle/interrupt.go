package main

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// msgImportInterrupted is what an import stopped by SIGINT or SIGTERM
// says: it rolled back what it had staged (docs/CLI.md §1.12).
const msgImportInterrupted = "interrupted: nothing was imported"

// stopOnSignal runs do with the command's context cancelled at the first
// SIGINT or SIGTERM (cliutil's StopSignals), so that a long command stops
// through its own error path, undoing what it began, instead of dying
// half way (the default action). A second signal has the default action
// again. A run that a signal ended in a failure returns
// cliutil.Interruptedf(msg) (exit 130); one that completed before the
// signal took effect stands. A signal already pending when the command
// starts stops it before it reads anything.
func stopOnSignal(env *cliutil.Env, c *cli.Context, msg string, do func() error) error {
	sigs, stopSignals := env.StopSignals()
	parent := c.Context
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	var got atomic.Bool
	stopped := make(chan struct{})
	select {
	case <-sigs:
		got.Store(true)
		cancel()
	default:
	}
	go func() {
		select {
		case <-sigs:
			got.Store(true)
			stopSignals()
			cancel()
		case <-stopped:
		}
	}()
	defer func() {
		close(stopped)
		stopSignals()
		cancel()
	}()
	c.Context = ctx
	defer func() { c.Context = parent }()
	if got.Load() {
		return cliutil.Interruptedf("%s", msg)
	}
	err := do()
	if got.Load() && errors.Is(err, context.Canceled) {
		return cliutil.Interruptedf("%s", msg)
	}
	return err // also after a signal: an answer that is not the cancel (an agent's refusal) is told as it is
}

// importContext is the context an import into s runs with: the command's
// own for a store this process holds, which rolls back what it staged when
// a signal cancels it; through a running agent's admin socket, one no
// signal cancels: the agent commits or rolls back on its own, and a
// cancellation racing its commit would make the command say "nothing was
// imported" of a bundle the agent serves. There the first signal lets the
// import run to the agent's answer, which the exit then tells (a second
// signal stops the command at once; docs/SPEC-DECISIONS.md CLI-22).
func importContext(ctx context.Context, s registry) context.Context {
	if _, held := s.Store(); held {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
