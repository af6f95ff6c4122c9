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

// onInstanceStarted commits the stanzas of the first instance once it is up. Event hooks
// cannot carry more: a SIGUSR1 reload purges them all before it restarts and restores them
// only when the restart fails, so after the first successful SIGUSR1 reload this hook never
// runs again. Instances therefore watch each other through their own hooks: see
// watchRestarts.
func onInstanceStarted(event caddy.EventName, _ any) error {
	if event == caddy.InstanceStartupEvent {
		starting.commit()
	}
	return nil
}

// restartHooksKey marks, in an instance's storage, that watchRestarts ran for it.
type restartHooksKey struct{}

// watchRestarts registers, once per instance, what happens when that instance is restarted:
// if the restart fails, the failed instance's stanzas are stopped (CoreDNS runs only the old
// instance's OnRestartFailed); if it succeeds, the old instance shuts down, and the new
// instance's stanzas are up for good.
func watchRestarts(c *caddy.Controller) {
	if c.Get(restartHooksKey{}) != nil {
		return
	}
	c.Set(restartHooksKey{}, true)
	c.OnRestartFailed(starting.abort)
	c.OnShutdown(func() error { starting.commit(); return nil })
}
