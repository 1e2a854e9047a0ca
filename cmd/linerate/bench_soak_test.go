package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/results"
)

// bench --soak end to end, inside a network namespace: an agent and bench
// on its loopback, bench reading the heat from a sysfs tree the test
// heats after the third second (80 °C, the clock capped, a Pi's throttle
// bits). The soak names that second, the temperature and the rates, ends
// the load soak-after later, well before --duration, and the run is not
// counted as interrupted; the result carries every second's heat.
func TestBenchSoak(t *testing.T) {
	ns := testenv.NewNetNS(t)
	bin := testenv.Linerate(t)
	root := t.TempDir()
	heat := func(celsius, khz int, bits string) {
		testenv.WriteFiles(t, root, map[string]string{
			"class/thermal/thermal_zone0/type":                 "cpu-thermal\n",
			"class/thermal/thermal_zone0/temp":                 fmt.Sprintf("%d\n", celsius*1000),
			"devices/system/cpu/online":                        "0\n",
			"devices/system/cpu/cpu0/cpufreq/scaling_cur_freq": fmt.Sprintf("%d\n", khz),
			"devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq": "1500000\n",
			"devices/platform/soc/soc:firmware/get_throttled":  bits + "\n",
		})
	}
	heat(55, 1500000, "0")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	serve := exec.CommandContext(ctx, "ip", "netns", "exec", ns.Name, bin, "serve", "--listen", "127.0.0.1:7557", "--quiet")
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); serve.Wait() })
	up := false
	for i := 0; i < 100 && !up; i++ {
		up = ns.Do(func() error {
			c, err := net.Dial("tcp", "127.0.0.1:7557")
			if err == nil {
				c.Close()
			}
			return err
		}) == nil
		if !up {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !up {
		t.Fatal("the agent did not listen")
	}

	bench := exec.CommandContext(ctx, "ip", "netns", "exec", ns.Name, bin, "bench", "udp", "--to", "127.0.0.1",
		"--rate", "2kpps", "--warmup", "1s", "--duration", "20s", "--idle", "0", "--soak", "--soak-after", "2s",
		"--soak-sysfs", root, "--json-stream", "--no-save")
	out, err := bench.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	var res results.Result
	intervals := 0
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev struct {
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not a JSON event: %q", sc.Text())
		}
		switch ev.Event {
		case "interval":
			if intervals++; intervals == 3 {
				heat(82, 1000000, "60006")
			}
		case "end":
			if err := json.Unmarshal(ev.Data, &res); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := bench.Wait(); err != nil {
		t.Fatalf("bench --soak: %v", err)
	}
	s := res.Soak
	if s == nil || s.Throttle == nil {
		t.Fatalf("no soak or no throttle in the result: %+v", s)
	}
	th := s.Throttle
	if th.At < 4 || th.At > 6 || th.Celsius != 82 || th.Zone != "thermal_zone0" || !strings.Contains(th.Why, "0x60006") {
		t.Errorf("throttle %+v", th)
	}
	if th.KHzBefore != 1500000 || th.KHzAfter != 1000000 || th.BPSBefore <= 0 || th.AfterUnknown || !th.Recovered {
		t.Errorf("clocks and rates around the throttle: %+v", th)
	}
	last := s.Samples[len(s.Samples)-1].T
	if last < th.At+2 || last > th.At+4 || res.Interrupted || s.Limit != 20 {
		t.Errorf("the soak ended at %v s (throttle at %v, limit %v), interrupted %v", last, th.At, s.Limit, res.Interrupted)
	}
	if z, ok := s.Samples[0].Hottest(); !ok || z.Celsius != 55 || s.Samples[0].Throttled == nil {
		t.Errorf("first second: %+v", s.Samples[0])
	}
}
