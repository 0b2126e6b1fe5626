"""A Cinder volume driver with no data path, for the loopback test partner.

Volumes exist only as database rows: create, delete, attach, detach, snapshot, extend and
volume-from-image all succeed without touching a disk. Built on the fake driver Cinder ships for
its own tests (cinder.tests.fake_driver.FakeLoggingVolumeDriver, which needs the `fixtures`
package), plus two things that driver leaves to real storage:

* image <-> volume copies are skipped;
* the create-from-image flow calls image_utils.qemu_img_info on the downloaded image, which runs
  qemu-img through sudo/privsep; it is answered from the file size instead (every image is treated
  as raw).

Use: [<backend>] volume_driver = capo_os_shims.cinder_noop.NoopVolumeDriver
"""

import os
import types

from cinder.image import image_utils
from cinder.tests import fake_driver


class NoopVolumeDriver(fake_driver.FakeLoggingVolumeDriver):
    """FakeLoggingVolumeDriver whose image transfers do nothing."""

    def copy_image_to_volume(self, context, volume, image_service, image_id,
                             disable_sparse=False):
        return None

    def copy_image_to_encrypted_volume(self, context, volume, image_service, image_id):
        return None

    def copy_volume_to_image(self, context, volume, image_service, image_meta):
        return None

    def clone_image(self, context, volume, image_location, image_meta, image_service):
        # (model update, cloned?) -- "not cloned" sends Cinder down the copy path above.
        return None, False


def _image_info_from_size(path, *args, **kwargs):
    size = os.path.getsize(path) if os.path.exists(path) else 0
    return types.SimpleNamespace(
        image=path, file_format="raw", virtual_size=size, disk_size=size, cluster_size=None,
        backing_file=None, snapshots=[], encrypted=None, format_specific=None)


# Installed at import time: cinder-volume imports the driver module before any volume is created.
image_utils.qemu_img_info = _image_info_from_size
