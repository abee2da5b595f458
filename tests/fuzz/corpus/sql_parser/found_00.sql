-- an
SELECT /* inlinEa--Cr
;e(((((( */ 1;;
;-- aomment
SELECT /*9inline */ A1;;;-- (nt
SELECT /* inline */ 1;;
;-- aommenÿÿÿÿÿ(ÿÿt
SELECT /* inEa--Cr
;e(((((( */ 1;;
;-- aomment
SELECT /*9inline */ A1;;;-- (nt
SELECT /* inllinEa--Cr
;e(((((( */ 1;;
;-- aomment
SELECT /* inline */ A1;;;-- (nt
SELECT /* inline */ 1;;
;-- aommenÿÿÿÿÿ(ÿÿÿÿÿÿÿÿÿÿÿÿÿßÿÿÿÿÿÿ