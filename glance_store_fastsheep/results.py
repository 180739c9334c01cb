# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Sheep's result codes, sheep's text for each, what glance makes of it.

One table for both clients: the native client reads the code in each
response (``native.errors.error_for``); the dog client finds the
code's text in what ``dog`` prints, which is sheep's ``sd_strerror``
text after dog's own words (``dog.command.error_for``). The texts are
sheepdog 1.0.1's (``include/sheep.h``), the same in 0.9.5 for every
code below.
"""

from glance_store import exceptions

# Public result codes (0x00-0x1D) and the sheep-internal ones (0x81 on)
# that a gateway can hand a client: sheepdog's name and sd_strerror text.
RESULTS = {
    0x00: ('SD_RES_SUCCESS', 'Success'),
    0x01: ('SD_RES_UNKNOWN', 'Unknown error'),
    0x02: ('SD_RES_NO_OBJ', 'No object found'),
    0x03: ('SD_RES_EIO', 'I/O error'),
    0x04: ('SD_RES_VDI_EXIST', 'VDI exists already'),
    0x05: ('SD_RES_INVALID_PARMS', 'Invalid parameters'),
    0x06: ('SD_RES_SYSTEM_ERROR', 'System error'),
    0x07: ('SD_RES_VDI_LOCKED', 'VDI is already locked'),
    0x08: ('SD_RES_NO_VDI', 'No VDI found'),
    0x09: ('SD_RES_NO_BASE_VDI', 'No base VDI found'),
    0x0A: ('SD_RES_VDI_READ', 'Failed to read from requested VDI'),
    0x0B: ('SD_RES_VDI_WRITE', 'Failed to write to requested VDI'),
    0x0C: ('SD_RES_BASE_VDI_READ', 'Failed to read from base VDI'),
    0x0D: ('SD_RES_BASE_VDI_WRITE', 'Failed to write to base VDI'),
    0x0E: ('SD_RES_NO_TAG', 'Failed to find requested tag'),
    0x0F: ('SD_RES_STARTUP', 'System is still booting'),
    0x10: ('SD_RES_VDI_NOT_LOCKED', 'VDI is not locked'),
    0x11: ('SD_RES_SHUTDOWN', 'System is shutting down'),
    0x12: ('SD_RES_NO_MEM', 'Out of memory on server'),
    0x13: ('SD_RES_FULL_VDI', 'Maximum number of VDIs reached'),
    0x14: ('SD_RES_VER_MISMATCH', 'Protocol version mismatch'),
    0x15: ('SD_RES_NO_SPACE', 'Server has no space for new objects'),
    0x16: ('SD_RES_WAIT_FOR_FORMAT', 'Waiting for cluster to be formatted'),
    0x17: ('SD_RES_WAIT_FOR_JOIN', 'Waiting for other nodes to join cluster'),
    0x18: ('SD_RES_JOIN_FAILED', 'Node has failed to join cluster'),
    0x19: ('SD_RES_HALT',
           'IO has halted as there are not enough living nodes'),
    0x1A: ('SD_RES_READONLY', 'Object is read-only'),
    0x1D: ('SD_RES_INODE_INVALIDATED', 'Inode object is invalidated'),
    0x81: ('SD_RES_OLD_NODE_VER', 'Request has an old epoch'),
    0x82: ('SD_RES_NEW_NODE_VER', 'Request has a new epoch'),
    0x83: ('SD_RES_NOT_FORMATTED', 'Cluster has not been formatted'),
    0x86: ('SD_RES_NETWORK_ERROR', 'Network error between sheep'),
    0x8C: ('SD_RES_NODE_IN_RECOVERY', 'Targeted node is in recovery'),
    0x8D: ('SD_RES_KILLED', 'Node is killed'),
    0x8F: ('SD_RES_AGAIN', 'Ask to try again'),
}

SUCCESS = 0x00
NO_OBJ = 0x02
VDI_EXIST = 0x04
INVALID_PARMS = 0x05
VDI_LOCKED = 0x07
NO_VDI = 0x08
NO_TAG = 0x0E
FULL_VDI = 0x13
VER_MISMATCH = 0x14
NO_SPACE = 0x15
READONLY = 0x1A
WAIT_FOR_FORMAT = 0x16
NOT_FORMATTED = 0x83

# What glance makes of a final result: Duplicate (409 on upload), the
# VDI or its tag missing (NotFound), the cluster full, for objects or
# VDIs (StorageFull, 413), a VM holding the VDI's lock (InUseByStore,
# 409 on delete), a read-only object, a snapshot's (Forbidden). Any
# other result is a BackendException.
EXCEPTIONS = {
    VDI_EXIST: exceptions.Duplicate,
    NO_VDI: exceptions.NotFound,
    NO_TAG: exceptions.NotFound,
    NO_SPACE: exceptions.StorageFull,
    FULL_VDI: exceptions.StorageFull,
    VDI_LOCKED: exceptions.InUseByStore,
    READONLY: exceptions.Forbidden,
}

# Longest first: a text that holds another (none does today) is found
# as itself.
_BY_TEXT = sorted(((text.lower(), code)
                   for code, (_name, text) in RESULTS.items()),
                  key=lambda item: -len(item[0]))


def result_text(code):
    """'SD_RES_NAME (text)' of a result code, or 'unknown result 0xNN'."""
    known = RESULTS.get(code)
    if known is None:
        return 'unknown result 0x%02x' % code
    return '%s (%s)' % known


def exception_class(code):
    """The glance_store exception class a final result code raises."""
    return EXCEPTIONS.get(code, exceptions.BackendException)


def code_in(message):
    """The result code whose sheep text message holds, or None.

    Case-insensitive: for what ``dog`` prints, sheep's text after its
    own words.
    """
    lowered = message.lower()
    for text, code in _BY_TEXT:
        if text in lowered:
            return code
    return None
