#!/usr/bin/env python3
"""Pages the last commit of an LMDB file wrote, by tree, as JSON ({"tree": pages, ...}).

LMDB keeps the snapshots of its last two commits whole (each meta page points at one), so the
pages of the newer snapshot's trees that the older one does not use are the pages the last
commit wrote. The layout read here is LMDB 0.9's on 64-bit little-endian machines, as in
Sources/Feedstore/LMDB/LMDBPageCheck.swift. Usage: commit-pages.py DATA.mdb [PAGE_SIZE]
"""
import json
import struct
import sys

data = open(sys.argv[1], "rb").read()
page_size = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
NO_PAGE = 0xFFFFFFFFFFFFFFFF
BRANCH, OVERFLOW = 0x01, 0x04
BIG_DATA, SUB_DATABASE = 0x01, 0x02


def page(number):
    return data[number * page_size:(number + 1) * page_size]


def tree_pages(root, named=None):
    """Every page of the tree at `root`; named databases found in its leaves go into `named`."""
    pages, stack = set(), [] if root == NO_PAGE else [root]
    while stack:
        number = stack.pop()
        p = page(number)
        flags, lower = struct.unpack_from("<HH", p, 10)
        pages.add(number)
        if flags & OVERFLOW:
            pages.update(range(number + 1, number + struct.unpack_from("<I", p, 12)[0]))
            continue
        for i in range((lower - 16) // 2):
            offset = struct.unpack_from("<H", p, 16 + 2 * i)[0]
            lo, hi, node_flags, key_size = struct.unpack_from("<HHHH", p, offset)
            if flags & BRANCH:
                stack.append(lo | hi << 16 | node_flags << 32)
                continue
            data_at = offset + 8 + key_size
            if node_flags & BIG_DATA:
                stack.append(struct.unpack_from("<Q", p, data_at)[0])
            elif node_flags & SUB_DATABASE and named is not None:
                name = p[offset + 8:data_at].decode(errors="replace")
                named[name] = struct.unpack_from("<Q", p, data_at + 40)[0]
    return pages


def snapshot(meta_page):
    """(transaction id, {tree: pages}) of the snapshot meta page `meta_page` points at."""
    p = page(meta_page)
    free_root = struct.unpack_from("<Q", p, 16 + 24 + 40)[0]
    main_root = struct.unpack_from("<Q", p, 16 + 24 + 48 + 40)[0]
    txnid = struct.unpack_from("<Q", p, 16 + 24 + 96 + 8)[0]
    named = {}
    trees = {"(free list)": tree_pages(free_root), "(LMDB catalog)": tree_pages(main_root, named)}
    for name, root in named.items():
        trees[name] = tree_pages(root)
    return txnid, trees


older, newer = sorted([snapshot(0), snapshot(1)], key=lambda s: s[0])
before = set().union(*older[1].values())
print(json.dumps({name: len(pages - before) for name, pages in newer[1].items() if pages - before}))
