package main

// Verbatim output from seed 004 (the apu4d4 packet-rate post): venus's
// enp4s0 as `cat /proc/interrupts`, `ethtool -c/-l/-x/-g` and
// `ethtool -n enp4s0 rx-flow-hash tcp4|udp4` printed it. Each constant is
// the lines of the post joined with newlines, ending in a newline.

const seedIRQs = `  56:          0          1          0          0   PCI-MSI 2097152-edge      enp4s0
  57:          0          0        417  266296679   PCI-MSI 2097153-edge      enp4s0-rx-0
  58:        980        205       8093          7   PCI-MSI 2097154-edge      enp4s0-rx-1
  59:       2525        410       6187        204   PCI-MSI 2097155-edge      enp4s0-tx-0
  60:       1877        348       7462         85   PCI-MSI 2097156-edge      enp4s0-tx-1
`

const seedCoalesce = `Coalesce parameters for enp4s0:
Adaptive RX: off  TX: off
stats-block-usecs: 0
sample-interval: 0
pkt-rate-low: 0
pkt-rate-high: 0

rx-usecs: 3
rx-frames: 0
rx-usecs-irq: 0
rx-frames-irq: 0

tx-usecs: 3
tx-frames: 0
tx-usecs-irq: 0
tx-frames-irq: 0

rx-usecs-low: 0
rx-frames-low: 0
tx-usecs-low: 0
tx-frames-low: 0

rx-usecs-high: 0
rx-frames-high: 0
tx-usecs-high: 0
tx-frames-high: 0

`

const seedChannels = `Channel parameters for enp4s0:
Pre-set maximums:
RX:		0
TX:		0
Other:		1
Combined:	2
Current hardware settings:
RX:		0
TX:		0
Other:		1
Combined:	2

`

const seedRSS = `RX flow hash indirection table for enp4s0 with 2 RX ring(s):
    0:      0     0     0     0     0     0     0     0
    8:      0     0     0     0     0     0     0     0
   16:      0     0     0     0     0     0     0     0
   24:      0     0     0     0     0     0     0     0
   32:      0     0     0     0     0     0     0     0
   40:      0     0     0     0     0     0     0     0
   48:      0     0     0     0     0     0     0     0
   56:      0     0     0     0     0     0     0     0
   64:      1     1     1     1     1     1     1     1
   72:      1     1     1     1     1     1     1     1
   80:      1     1     1     1     1     1     1     1
   88:      1     1     1     1     1     1     1     1
   96:      1     1     1     1     1     1     1     1
  104:      1     1     1     1     1     1     1     1
  112:      1     1     1     1     1     1     1     1
  120:      1     1     1     1     1     1     1     1
RSS hash key:
Operation not supported
RSS hash function:
    toeplitz: on
    xor: off
    crc32: off
`

const seedRings = `Ring parameters for enp4s0:
Pre-set maximums:
RX:		4096
RX Mini:	0
RX Jumbo:	0
TX:		4096
Current hardware settings:
RX:		256
RX Mini:	0
RX Jumbo:	0
TX:		256

`

const seedTCP4 = `TCP over IPV4 flows use these fields for computing Hash flow key:
IP SA
IP DA
L4 bytes 0 & 1 [TCP/UDP src port]
L4 bytes 2 & 3 [TCP/UDP dst port]

`

const seedUDP4 = `UDP over IPV4 flows use these fields for computing Hash flow key:
IP SA
IP DA

`

const seedQueueStats = `     rx_queue_0_packets: 3808489796
     rx_queue_1_packets: 0
`
