"""A window that shows RGB frames (np.uint8 [H, W, 3]) scaled up with crisp pixels: glfw for the
window and keyboard, wgpu to draw (a textured full-window triangle, nearest sampling).

    viewer = Viewer("platformer", width=256, height=144, scale=4)
    while viewer.show(env.render(0)):       # False once the window is closed (or Esc pressed)
        if glfw.KEY_RIGHT in viewer.keys_down(): ...
    viewer.close()

Works under `xvfb-run -a` with Mesa's lavapipe. Used by `python -m envs.play` and by the
trainer's eval to watch a policy.
"""

import os
import sys

import numpy as np

_SHADER = """
@group(0) @binding(0) var frame: texture_2d<f32>;
@group(0) @binding(1) var pixel: sampler;

struct VOut { @builtin(position) pos: vec4<f32>, @location(0) uv: vec2<f32> };

@vertex
fn vs_main(@builtin(vertex_index) i: u32) -> VOut {
    // one triangle covering the window; uv (0,0) at the top-left
    let xy = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    var out: VOut;
    out.pos = vec4<f32>(xy * 2.0 - 1.0, 0.0, 1.0);
    out.uv = vec2<f32>(xy.x, 1.0 - xy.y);
    return out;
}

@fragment
fn fs_main(v: VOut) -> @location(0) vec4<f32> {
    return textureSample(frame, pixel, v.uv);
}
"""


class Viewer:
    """A glfw window showing frames of one size (width x height pixels, drawn scale times
    larger). Escape or the window's close button closes it."""

    def __init__(self, title, width, height, scale=4):
        import glfw
        import wgpu

        self._glfw = glfw
        if (sys.platform.startswith("linux") and os.environ.get("DISPLAY")
                and not os.environ.get("WAYLAND_DISPLAY") and hasattr(glfw, "PLATFORM_X11")):
            glfw.init_hint(glfw.PLATFORM, glfw.PLATFORM_X11)  # skip glfw's noisy Wayland probe
        if not glfw.init():
            raise RuntimeError("glfw.init() failed: no display? (run under `xvfb-run -a` on a "
                               "headless machine, or write a GIF instead)")
        glfw.window_hint(glfw.CLIENT_API, glfw.NO_API)  # wgpu draws, not OpenGL
        glfw.window_hint(glfw.RESIZABLE, True)
        self.width, self.height = int(width), int(height)
        self._window = glfw.create_window(self.width * scale, self.height * scale, title, None, None)
        if not self._window:
            raise RuntimeError(f"glfw could not create a {self.width * scale}x"
                               f"{self.height * scale} window")
        self._keys = set()
        self._pressed = []  # keys pressed since the last call to keys_pressed()
        glfw.set_key_callback(self._window, self._on_key)
        # Before the first draw: otherwise the surface under xvfb keeps a 640x480 default size.
        glfw.poll_events()

        self._context = wgpu.gpu.get_canvas_context(_present_info(glfw, self._window))
        adapter = wgpu.gpu.request_adapter_sync(power_preference="low-power")
        self._device = device = adapter.request_device_sync(label="viewer")
        self._format = self._context.get_preferred_format(adapter)
        self._context.configure(device=device, format=self._format)
        # Frames are sRGB-encoded bytes: if the surface encodes to sRGB on write, sample them as
        # sRGB (decoded to linear) so the round trip leaves them unchanged.
        tex_format = "rgba8unorm-srgb" if self._format.endswith("-srgb") else "rgba8unorm"
        self._texture = device.create_texture(
            label="viewer frame", size=(self.width, self.height, 1), format=tex_format,
            usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST)
        sampler = device.create_sampler(label="viewer nearest", mag_filter="nearest",
                                        min_filter="nearest")
        shader = device.create_shader_module(label="viewer blit", code=_SHADER)
        layout = device.create_bind_group_layout(label="viewer", entries=[
            {"binding": 0, "visibility": wgpu.ShaderStage.FRAGMENT,
             "texture": {"sample_type": "float", "view_dimension": "2d"}},
            {"binding": 1, "visibility": wgpu.ShaderStage.FRAGMENT,
             "sampler": {"type": "filtering"}},
        ])
        self._bind_group = device.create_bind_group(label="viewer", layout=layout, entries=[
            {"binding": 0, "resource": self._texture.create_view()},
            {"binding": 1, "resource": sampler},
        ])
        self._pipeline = device.create_render_pipeline(
            label="viewer blit",
            layout=device.create_pipeline_layout(label="viewer", bind_group_layouts=[layout]),
            vertex={"module": shader, "entry_point": "vs_main"},
            fragment={"module": shader, "entry_point": "fs_main",
                      "targets": [{"format": self._format}]},
            primitive={"topology": "triangle-list"})
        self._rgba = np.full((self.height, self.width, 4), 255, dtype=np.uint8)

    def _on_key(self, window, key, scancode, action, mods):
        glfw = self._glfw
        if action == glfw.PRESS:
            self._keys.add(key)
            self._pressed.append(key)
            if key == glfw.KEY_ESCAPE:
                glfw.set_window_should_close(window, True)
        elif action == glfw.RELEASE:
            self._keys.discard(key)

    @property
    def is_open(self):
        return self._window is not None and not self._glfw.window_should_close(self._window)

    def keys_down(self):
        """glfw key codes held down now (glfw.KEY_LEFT, glfw.KEY_A, ...)."""
        return set(self._keys)

    def keys_pressed(self):
        """glfw key codes pressed since the last call, in order (for turn-based play)."""
        keys, self._pressed = self._pressed, []
        return keys

    def poll(self):
        """Processes window events; returns whether the window is still open."""
        if self._window is None:
            return False
        self._glfw.poll_events()
        return self.is_open

    def show(self, rgb):
        """Draws one frame and processes events; returns False once the window was closed."""
        if not self.poll():
            return False
        rgb = np.asarray(rgb)
        if rgb.shape != (self.height, self.width, 3) or rgb.dtype != np.uint8:
            raise ValueError(f"frame must be np.uint8 [{self.height}, {self.width}, 3], got "
                             f"{rgb.dtype} {rgb.shape}")
        fw, fh = self._glfw.get_framebuffer_size(self._window)
        if fw == 0 or fh == 0:  # minimized
            return True
        self._context.set_physical_size(fw, fh)
        self._rgba[..., :3] = rgb
        self._device.queue.write_texture(
            {"texture": self._texture}, self._rgba,
            {"bytes_per_row": self.width * 4, "rows_per_image": self.height},
            (self.width, self.height, 1))
        target = self._context.get_current_texture()
        encoder = self._device.create_command_encoder(label="viewer frame")
        rpass = encoder.begin_render_pass(label="viewer blit", color_attachments=[{
            "view": target.create_view(), "load_op": "clear", "store_op": "store",
            "clear_value": (0, 0, 0, 1)}])
        rpass.set_pipeline(self._pipeline)
        rpass.set_bind_group(0, self._bind_group)
        rpass.draw(3)
        rpass.end()
        self._device.queue.submit([encoder.finish()])
        self._context.present()
        return True

    def close(self):
        if self._window is not None:
            self._glfw.destroy_window(self._window)
            self._window = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _present_info(glfw, window):
    """What wgpu needs to draw into a glfw window (rendercanvas's glfw backend does the same)."""
    import warnings

    if sys.platform.startswith("win"):
        return {"method": "screen", "platform": "windows", "window": int(glfw.get_win32_window(window))}
    if sys.platform.startswith("darwin"):
        return {"method": "screen", "platform": "cocoa", "window": int(glfw.get_cocoa_window(window))}
    with warnings.catch_warnings():  # the platform glfw did not pick answers None with a warning
        warnings.simplefilter("ignore", glfw.GLFWError)
        wayland = glfw.get_wayland_display() if hasattr(glfw, "get_wayland_display") else None
        if wayland is not None:
            return {"method": "screen", "platform": "wayland",
                    "window": int(glfw.get_wayland_window(window)), "display": int(wayland)}
        x11 = glfw.get_x11_display() if hasattr(glfw, "get_x11_display") else None
    if x11 is None:
        raise RuntimeError("glfw found neither a Wayland nor an X11 display")
    return {"method": "screen", "platform": "x11", "window": int(glfw.get_x11_window(window)),
            "display": int(x11)}
