chain ddos_tb_2_lev (0 argument(s), 37 instructions)
  ;  18 | u64 : res = ip6_hset_srcdst(LOOKUP)
     0: r1 = 2
     1: call prog 0, 1  ; sets::ip6_hset_srcdst
     2: r6 = r0
  ;  19 | if res == BLACKLISTED:
     3: if r6 != 0 goto +15
  ;  21 | res = ip6_sd_dec2zero(500)
     4: r1 = 500
     5: call prog 0, 1  ; sampler::ip6_sd_dec2zero
     6: r6 = r0
  ;  22 | if res == 0:
     7: if r6 != 0 goto +6
  ;  23 | monitor(REDIRECT)
     8: r1 = 2
     9: call prog 0, 1  ; net::monitor
  ;  24 | l2_redirect(REDIRECT_IF_INDEX)
    10: r1 = 6
    11: call prog 0, 1  ; net::l2_redirect
  ;  25 | return 0
    12: r0 = 0
    13: exit
  ;  27 | monitor(DROP)
    14: r1 = 1
    15: call prog 0, 1  ; net::monitor
  ;  28 | hike_drop()
    16: call prog 0, 0  ; net::hike_drop
  ;  29 | return 0
    17: r0 = 0
    18: exit
  ;  32 | res = ip6_dst_tbmon()
    19: call prog 0, 0  ; meter::ip6_dst_tbmon
    20: r6 = r0
  ;  33 | if res != IN_PROFILE:
    21: if r6 == 0 goto +10
  ;  35 | res = ip6_sd_tbmon()
    22: call prog 0, 0  ; meter::ip6_sd_tbmon
    23: r6 = r0
  ;  36 | if res != IN_PROFILE:
    24: if r6 == 0 goto +7
  ;  38 | ip6_hset_srcdst(ADD)
    25: r1 = 1
    26: call prog 0, 1  ; sets::ip6_hset_srcdst
  ;  39 | monitor(DROP)
    27: r1 = 1
    28: call prog 0, 1  ; net::monitor
  ;  40 | hike_drop()
    29: call prog 0, 0  ; net::hike_drop
  ;  41 | return 0
    30: r0 = 0
    31: exit
  ;  43 | monitor(PASS)
    32: r1 = 0
    33: call prog 0, 1  ; net::monitor
  ;  44 | hike_pass()
    34: call prog 0, 0  ; net::hike_pass
  ;  45 | return 0
    35: r0 = 0
    36: exit
