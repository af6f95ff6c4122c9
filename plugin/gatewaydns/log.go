package gatewaydns

import clog "github.com/coredns/coredns/plugin/pkg/log"

// pluginName is the plugin's name: its directive, the tag of its log lines and the subsystem of
// its metrics.
const pluginName = "gatewaydns"

var log = clog.NewWithPlugin(pluginName)
