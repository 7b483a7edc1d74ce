"""What a failed build says: the compiler's output from its first error, with a hint where a known
PufferLib or raylib mismatch caused it, and an undefined symbol at load time named with the line
that uses it."""
import re
from pathlib import Path

from ..errors import EnvBuildError

MAX_ERROR_LINES = 40  # of compiler output shown, counted from the first error

# raylib API names that are not in envs/c/raylib.h (3D, shaders, audio, render textures, image
# editing, ...): a build error that mentions one says so instead of a bare compiler message.
RAYLIB_NOT_IN_SUBSET = set("""
BeginMode3D EndMode3D UpdateCamera UpdateCameraPro GetCameraMatrix GetMouseRay GetScreenToWorldRay
GetWorldToScreen GetWorldToScreenEx DrawLine3D DrawPoint3D DrawCircle3D DrawTriangle3D
DrawTriangleStrip3D DrawCube DrawCubeV DrawCubeWires DrawCubeWiresV DrawSphere DrawSphereEx
DrawSphereWires DrawCylinder DrawCylinderEx DrawCylinderWires DrawCylinderWiresEx DrawCapsule
DrawCapsuleWires DrawPlane DrawRay DrawGrid DrawBoundingBox DrawBillboard DrawBillboardRec
DrawBillboardPro LoadModel LoadModelFromMesh UnloadModel IsModelValid IsModelReady DrawModel
DrawModelEx DrawModelWires DrawModelWiresEx DrawMesh DrawMeshInstanced UploadMesh UpdateMeshBuffer
UnloadMesh GenMeshPoly GenMeshPlane GenMeshCube GenMeshSphere GenMeshHemiSphere GenMeshCylinder
GenMeshCone GenMeshTorus GenMeshKnot GenMeshHeightmap GenMeshCubicmap GenMeshTangents
LoadMaterialDefault LoadMaterials UnloadMaterial SetMaterialTexture SetModelMeshMaterial
LoadModelAnimations UpdateModelAnimation UnloadModelAnimations GetMeshBoundingBox
GetModelBoundingBox GetRayCollisionBox GetRayCollisionMesh GetRayCollisionSphere
GetRayCollisionTriangle GetRayCollisionQuad LoadShader LoadShaderFromMemory UnloadShader
BeginShaderMode EndShaderMode GetShaderLocation SetShaderValue SetShaderValueV SetShaderValueMatrix
SetShaderValueTexture LoadRenderTexture UnloadRenderTexture BeginTextureMode EndTextureMode
InitAudioDevice CloseAudioDevice IsAudioDeviceReady SetMasterVolume LoadSound LoadSoundFromWave
UnloadSound PlaySound StopSound SetSoundVolume LoadWave UnloadWave LoadMusicStream UnloadMusicStream
PlayMusicStream UpdateMusicStream StopMusicStream LoadAudioStream UpdateAudioStream
LoadImageFromScreen LoadImageFromTexture LoadImageFromMemory GenImageColor GenImageGradientLinear
GenImageChecked ImageCopy ImageResize ImageResizeNN ImageCrop ImageFlipVertical ImageDraw
ImageDrawPixel ImageDrawRectangle ImageDrawText ImageColorTint ExportImage TakeScreenshot
UpdateTexture UpdateTextureRec GenTextureMipmaps SetTextureWrap DrawTextureNPatch DrawTextPro
DrawTextCodepoint DrawTextCodepoints GetGlyphIndex GetGlyphInfo LoadFontFromImage
LoadFontFromMemory DrawSplineLinear DrawSplineBezierCubic DrawLineBezier DrawModelPoints
SetWindowState ClearWindowState SetWindowPosition SetWindowMonitor GetMonitorWidth
GetMonitorHeight GetCurrentMonitor GetWindowPosition GetWindowScaleDPI SetClipboardText
GetClipboardText EnableCursor DisableCursor HideCursor ShowCursor SetMouseCursor PollInputEvents
SwapScreenBuffer WaitTime IsGamepadAvailable GetGamepadAxisMovement IsGamepadButtonDown
IsGamepadButtonPressed GetGamepadName GetTouchX GetTouchY GetTouchPosition LoadFileData
UnloadFileData SaveFileData FileExists DirectoryExists GetFileLength
rlPushMatrix rlPopMatrix rlTranslatef rlRotatef rlScalef rlBegin rlEnd rlVertex2f rlVertex3f
rlColor4ub rlSetTexture rlDisableBackfaceCulling rlEnableBackfaceCulling
Camera Camera3D Model Mesh Material MaterialMap Shader RenderTexture RenderTexture2D Sound Music
Wave AudioStream BoundingBox Ray RayCollision ModelAnimation Transform BoneInfo NPatchInfo
CAMERA_PERSPECTIVE CAMERA_ORTHOGRAPHIC CAMERA_FREE CAMERA_ORBITAL CAMERA_FIRST_PERSON
CAMERA_THIRD_PERSON MATERIAL_MAP_DIFFUSE MATERIAL_MAP_ALBEDO
""".split())

_DIAG = re.compile(r"^(?P<loc>[^\s:][^:]*:\d+(?::\d+)?): (?P<kind>fatal error|error|warning|note): (?P<msg>.*)$")

_HINTS = [
    (re.compile(r"invalid type argument of '->'|member reference type 'double' is not a pointer|"
                r"request for member 'value' in something not a structure"),
     "in PufferLib 5.0 dict_get returns the value as a double: write "
     "`env->x = dict_get(kwargs, \"x\");` (not `dict_get(..)->value`)"),
    (re.compile(r"conflicting types for '(Log|Env)'|typedef redefinition with different types.*'(Log|Env)'|"
                r"redefinition of typedef '(Log|Env)'"),
     "pufferenv.h declares `typedef struct Env Env; typedef struct Log Log;` (as PufferLib 5.0's "
     "does): define the named structs `struct Log {...};` and `struct Env {...};`"),
    (re.compile(r"unknown type name '(Log|Env)'"),
     "include \"pufferenv.h\" (after `typedef ... obs_t;`) before using Log and Env"),
    (re.compile(r"unknown type name 'obs_t'|'obs_t' undeclared"),
     "typedef obs_t (float, unsigned char, ...) before #include \"pufferenv.h\""),
]


def _raylib_name(msg):
    for name in re.findall(r"[‘'`\"]([A-Za-z_]\w*)[’'`\"]", msg):
        if name in RAYLIB_NOT_IN_SUBSET:
            return name
    return None


def explain_build_errors(stderr, limit=MAX_ERROR_LINES):
    """The compiler output from its first error on (at most `limit` lines, so the root cause is
    what shows), with a hint under each error that has a known cause. Returns (text, first
    error's 'file:line' or None)."""
    lines = stderr.splitlines()
    first = next((i for i, l in enumerate(lines) if (m := _DIAG.match(l)) and "error" in m["kind"]), None)
    if first is None:
        return "\n".join(lines[:limit]), None
    # keep the "In file included from" lines that lead to the first error
    start = first
    while start > 0 and (lines[start - 1].startswith("In file included from")
                         or lines[start - 1].startswith("                 from")
                         or lines[start - 1].endswith("In function") or ": In function" in lines[start - 1]):
        start -= 1
    out, seen = [], set()
    for line in lines[start:start + limit]:
        out.append(line)
        m = _DIAG.match(line)
        if not m or "error" not in m["kind"]:
            continue
        msg = m["msg"].replace("\u2018", "'").replace("\u2019", "'")  # gcc's typographic quotes
        name = _raylib_name(msg)
        hint = None
        if name is not None:
            hint = (f"`{name}` is raylib API that puffgpu's software raylib subset (envs/c/raylib.h) "
                    f"does not provide (3D, shaders, audio, render textures and image editing are "
                    f"not in it); draw with its 2D calls, or guard the call with "
                    f"`#ifndef PUFFGPU_RAYLIB_SUBSET`")
        elif re.search(r"implicit declaration of function '([A-Z]\w*)'", msg):
            fn = re.search(r"implicit declaration of function '(\w+)'", msg)[1]
            hint = (f"`{fn}` is declared nowhere; if it is a raylib call, it is not in puffgpu's "
                    f"raylib subset (envs/c/raylib.h)")
        else:
            for pattern, text in _HINTS:
                if pattern.search(msg):
                    hint = text
                    break
        if hint and hint not in seen:
            seen.add(hint)
            out.append(f"  puffgpu: {hint}")
    if len(lines) > start + limit:
        out.append(f"... ({len(lines) - start - limit} more lines of compiler output)")
    return "\n".join(out), lines[first].split(": ")[0]


def undefined_symbol_error(header, err):
    """An ImportError for an undefined symbol: name it and where the env uses it."""
    m = re.search(r"undefined symbol: (\w+)", str(err))
    if not m:
        return None
    name = m[1]
    where = ""
    for path in [header, *sorted(header.parent.glob("*.h"))]:
        try:
            for n, line in enumerate(Path(path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if re.search(rf"\b{re.escape(name)}\b", line):
                    where = f" ({path}:{n} uses it)"
                    break
        except OSError:
            continue
        if where:
            break
    need = ""
    if name.startswith("puf_"):
        need = (" Every env defines puf_init, puf_reset, puf_step, puf_render, puf_close and "
                "puf_log; pufferenv.h provides puf_web_vsync.")
    return EnvBuildError(f"env {header} compiled, but its module needs `{name}`, which nothing "
                         f"defines{where}.{need}")
