SELECT  +d /fl FROM t WHERE a > 0 OR s LIKE '
a%'