package traffic
