SELECT v















{