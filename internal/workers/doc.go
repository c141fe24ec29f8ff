// Package workers runs short tasks on reusable goroutines (Pool): the
// AMPS/TCP server's message handlers and the agent's detached capability
// handlers. A goroutine per task starts with a small stack and copies it
// as it grows to what verifying, validating and signing need; a worker
// keeps its grown stack from one task to the next.
package workers
