// Package statelog tells a change of state from a repeat of it, so that a condition met again
// on every retry (etcd or the Kubernetes API not answering, a secondary not answering a NOTIFY,
// a zone a writer cannot read) is logged and reported once when it begins and once when it
// ends, however many retries lie between.
package statelog

import "sync"

// States holds the last state of each of several subjects. A subject not seen yet, or
// forgotten by Reset, is in the zero S: callers make it mean "not known" or "fine". The zero
// value is ready to use and safe for concurrent use.
type States[K, S comparable] struct {
	mu   sync.Mutex
	last map[K]S
}

// Set makes s the state of subject. When that differs from its state before, changed is called
// with the state before, while Set still holds the states: the reports of two changes are made
// in the order of the changes, never the other way round. changed must not call Set or Reset
// of the same States.
func (st *States[K, S]) Set(subject K, s S, changed func(prev S)) {
	st.mu.Lock()
	defer st.mu.Unlock()
	prev := st.last[subject]
	if prev == s {
		return
	}
	if st.last == nil {
		st.last = map[K]S{}
	}
	st.last[subject] = s
	changed(prev)
}

// Reset forgets the state of every subject: the next state of each is news again, unless it
// is the zero S.
func (st *States[K, S]) Reset() {
	st.mu.Lock()
	defer st.mu.Unlock()
	clear(st.last)
}

// Forget forgets the state of one subject, one that is gone for good (a target no longer
// checked), so that subjects that come and go do not pile up.
func (st *States[K, S]) Forget(subject K) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.last, subject)
}

// Len is how many subjects are in a state other than forgotten.
func (st *States[K, S]) Len() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.last)
}

// State is the last state of one subject: States with a single subject.
type State[S comparable] struct{ states States[struct{}, S] }

// Set makes s the state, calling changed with the state before when it differs (States.Set).
func (st *State[S]) Set(s S, changed func(prev S)) { st.states.Set(struct{}{}, s, changed) }
