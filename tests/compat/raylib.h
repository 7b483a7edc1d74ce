/* The part of raylib's public API (raylib 5.x raylib.h: types and prototypes) that puffgpu's own
 * envs call, declared as the real library declares it: extern functions, no definitions. Used
 * with pufferenv.h beside it to check that the envs compile against PufferLib + real raylib.
 */
#pragma once

#include <stdbool.h>

typedef struct Vector2 { float x; float y; } Vector2;
typedef struct Color { unsigned char r; unsigned char g; unsigned char b; unsigned char a; } Color;
typedef struct Rectangle { float x; float y; float width; float height; } Rectangle;

#define CLITERAL(type) (type)
#define GRAY       CLITERAL(Color){ 130, 130, 130, 255 }
#define DARKGRAY   CLITERAL(Color){ 80, 80, 80, 255 }
#define GOLD       CLITERAL(Color){ 255, 203, 0, 255 }
#define SKYBLUE    CLITERAL(Color){ 102, 191, 255, 255 }
#define RAYWHITE   CLITERAL(Color){ 245, 245, 245, 255 }

void InitWindow(int width, int height, const char* title);
void CloseWindow(void);
bool IsWindowReady(void);
void SetTargetFPS(int fps);
void BeginDrawing(void);
void EndDrawing(void);
void ClearBackground(Color color);
void DrawRectangle(int posX, int posY, int width, int height, Color color);
void DrawRectangleLines(int posX, int posY, int width, int height, Color color);
void DrawCircle(int centerX, int centerY, float radius, Color color);
void DrawLine(int startPosX, int startPosY, int endPosX, int endPosY, Color color);
void DrawText(const char* text, int posX, int posY, int fontSize, Color color);
const char* TextFormat(const char* text, ...);
Color Fade(Color color, float alpha);
