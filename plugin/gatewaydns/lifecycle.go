package gatewaydns

import (
	"sync"

	"github.com/coredns/caddy"
)

// CoreDNS starts a stanza in its instance's OnStartup, before the servers listen. When a
// later part of a reload fails (another plugin's startup, a port already in use), CoreDNS
// throws the new instance away without running its shutdown hooks, and only the old
// instance hears of it (OnRestartFailed). starting remembers the stanzas started since the
// last instance came up whole, so that one of those hooks can stop them: a rejected Corefile
// must leave no watcher, informer or campaigning writer behind.
var starting = &startLog{}

type startLog struct {
	mu      sync.Mutex
	stanzas []*stanza
}

// add records a stanza that started with an instance that is not up yet.
func (l *startLog) add(s *stanza) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stanzas = append(l.stanzas, s)
}

// commit forgets the stanzas started so far: their instance is up, and its shutdown hooks
// will stop them.
func (l *startLog) commit() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stanzas = nil
}

// abort stops the stanzas of an instance that failed to start.
func (l *startLog) abort() error {
	l.mu.Lock()
	stanzas := l.stanzas
	l.stanzas = nil
	l.mu.Unlock()
	if len(stanzas) > 0 {
		log.Infof("Reload failed: stopping the %d stanza(s) it had started", len(stanzas))
	}
	for _, s := range stanzas {
		if err := s.stop(); err != nil {
			log.Error(err)
		}
	}
	return nil
}

// onInstanceStarted commits the stanzas of an instance that came up whole and makes sure
// that, whatever its Corefile holds, a failed reload of it stops what the failed instance
// started.
func onInstanceStarted(event caddy.EventName, info any) error {
	if event != caddy.InstanceStartupEvent {
		return nil
	}
	starting.commit()
	if inst, ok := info.(*caddy.Instance); ok {
		inst.OnRestartFailed = append(inst.OnRestartFailed, starting.abort)
	}
	return nil
}
