// Package handover is what a CoreDNS reload hands over from one instance of the plugin to the
// next: the components both roles run (the serve role's feeds, the publish role's publishers),
// shared by key across instances, and the bound on each wait of their stops.
package handover

import (
	"sync"
	"time"
)

// Component is what a Registry holds: it runs until Stop.
type Component interface {
	comparable
	Stop() error
}

// Registry holds components that outlive the CoreDNS instance that started them: a reload
// whose stanza asks for the same thing (same key) shares the running one instead of starting
// a second, for the same reason CoreDNS's metrics and health plugins keep their listeners
// across a reload: what a reload does not change must not restart. A component stops when
// the last stanza holding it lets go. The registries are the only state gatewaydns keeps
// across instances.
type Registry[T Component] struct {
	mu    sync.Mutex
	byKey map[string]*holding[T]
}

type holding[T any] struct {
	v    T
	refs int
}

// NewRegistry returns an empty registry.
func NewRegistry[T Component]() *Registry[T] {
	return &Registry[T]{byKey: map[string]*holding[T]{}}
}

// Acquire returns the running component of key, or starts one with start. The caller
// releases it.
func (r *Registry[T]) Acquire(key string, start func() (T, error)) (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.byKey[key]; ok {
		h.refs++
		return h.v, nil
	}
	v, err := start()
	if err != nil {
		return v, err
	}
	r.byKey[key] = &holding[T]{v: v, refs: 1}
	return v, nil
}

// Share returns a running component for which match holds, acquired as Acquire does.
func (r *Registry[T]) Share(match func(T) bool) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.byKey {
		if match(h.v) {
			h.refs++
			return h.v, true
		}
	}
	var zero T
	return zero, false
}

// Any reports whether a running component matches.
func (r *Registry[T]) Any(match func(T) bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.byKey {
		if match(h.v) {
			return true
		}
	}
	return false
}

// Release lets go of v, acquired under key; the last release stops it, outside the lock.
func (r *Registry[T]) Release(key string, v T) error {
	r.mu.Lock()
	h, ok := r.byKey[key]
	if !ok || h.v != v {
		r.mu.Unlock()
		return nil
	}
	h.refs--
	last := h.refs == 0
	if last {
		delete(r.byKey, key)
	}
	r.mu.Unlock()
	if !last {
		return nil
	}
	return v.Stop()
}

// StopWait bounds each wait of a component's stop: for its goroutines to return after their
// context ended, and for its etcd client to close. They return at once unless something is
// broken; a stop that hangs would hold up a reload or SIGTERM, which is worse than a goroutine
// left behind, and the log says so.
const StopWait = 2 * time.Second

// WaitClosed reports whether c closed within d.
func WaitClosed(c <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c:
		return true
	case <-t.C:
		return false
	}
}
