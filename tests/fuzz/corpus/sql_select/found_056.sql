SELECT ti +d /-2 FROM t WHERE a > 0 OR s LIKE '
a%'