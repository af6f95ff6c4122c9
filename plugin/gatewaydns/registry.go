package gatewaydns

import "sync"

// registry holds components that outlive the CoreDNS instance that started them: a reload
// whose stanza asks for the same thing (same key) shares the running one instead of starting
// a second, for the same reason CoreDNS's metrics and health plugins keep their listeners
// across a reload: what a reload does not change must not restart. A component stops when
// the last stanza holding it lets go. This is the only state gatewaydns keeps across
// instances.
type registry[T interface {
	comparable
	stop() error
}] struct {
	mu    sync.Mutex
	byKey map[string]*holding[T]
}

type holding[T any] struct {
	v    T
	refs int
}

func newRegistry[T interface {
	comparable
	stop() error
}]() *registry[T] {
	return &registry[T]{byKey: map[string]*holding[T]{}}
}

// acquire returns the running component of key, or starts one with start. The caller
// releases it.
func (r *registry[T]) acquire(key string, start func() (T, error)) (T, error) {
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

// share returns a running component for which match holds, acquired as acquire does.
func (r *registry[T]) share(match func(T) bool) (T, bool) {
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

// any reports whether a running component matches.
func (r *registry[T]) any(match func(T) bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.byKey {
		if match(h.v) {
			return true
		}
	}
	return false
}

// release lets go of v, acquired under key; the last release stops it, outside the lock.
func (r *registry[T]) release(key string, v T) error {
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
	return v.stop()
}
