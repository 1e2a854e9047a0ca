// Package rtnl holds what the kernel's routing netlink (rtnetlink) says
// about the interfaces and traffic-control queues of one network namespace:
// every counter of struct rtnl_link_stats64 (Link, LinkStats), the
// statistics of each qdisc and class (packets, drops, overlimits,
// requeues, backlog) and the rates of shaping qdiscs and classes (tbf,
// htb, cake), with their differences and tc's way of printing a handle.
//
// It is data only, so the model (box), the arithmetic (ceiling) and the
// rules (ledger, diagnose) use these types without linking a netlink
// library. The client that reads them from the kernel is
// linerate/source/rtnl/rtnetlink.
package rtnl
