package source

import (
	"fmt"

	"linerate/source/ethtool"
)

// renderEthtool prints one capture file of an interface (its name in
// docs/capture.md: "k.txt", "n-udp4.txt", ...) the way the ethtool command
// would, from what the client reads. An item the driver lacks prints as
// ethtool's error line, which reads back as unsupported.
func renderEthtool(c ethtool.Client, iface, file string) ([]byte, error) {
	var s string
	var err error
	switch file {
	case "i.txt":
		var v ethtool.DriverInfo
		if v, err = c.DriverInfo(iface); err == nil {
			s = ethtool.RenderDriverInfo(iface, v)
		}
	case "link.txt":
		var v ethtool.LinkInfo
		if v, err = c.LinkInfo(iface); err == nil {
			s = ethtool.RenderLinkInfo(iface, v)
		}
	case "k.txt":
		var v ethtool.Features
		if v, err = c.Features(iface); err == nil {
			s = ethtool.RenderFeatures(iface, v)
		}
	case "c.txt":
		var v ethtool.Coalesce
		if v, err = c.Coalesce(iface); err == nil {
			s = ethtool.RenderCoalesce(iface, v)
		}
	case "g.txt":
		var v ethtool.Rings
		if v, err = c.Rings(iface); err == nil {
			s = ethtool.RenderRings(iface, v)
		}
	case "l.txt":
		var v ethtool.Channels
		if v, err = c.Channels(iface); err == nil {
			s = ethtool.RenderChannels(iface, v)
		}
	case "x.txt":
		var v ethtool.RSS
		if v, err = c.RSS(iface); err == nil {
			s = ethtool.RenderRSS(iface, v)
		}
	case "S.txt":
		var v ethtool.Stats
		if v, err = c.Stats(iface); err == nil {
			s = ethtool.RenderStats(iface, v)
		}
	case "n-tcp4.txt", "n-udp4.txt", "n-tcp6.txt", "n-udp6.txt":
		ft := ethtool.FlowType(file[2:6])
		var v ethtool.FlowHash
		if v, err = c.FlowHash(iface, ft); err == nil {
			s = ethtool.RenderFlowHash(iface, ft, v)
		}
	default:
		return nil, fmt.Errorf("no ethtool item %s", file)
	}
	if err != nil {
		s = ethtool.RenderError(err)
	}
	return []byte(s), nil
}
